package httpapi

import "crypto/sha256"

// SwapWithoutRevoking installs tokens as the accepted set without ending
// the held requests of the tokens it drops: the instant inside Reload
// between storing the new set and cancelling those requests one by one,
// which a test cannot otherwise hold open.
func (t *Tokens) SwapWithoutRevoking(tokens ...string) {
	hs := make([][sha256.Size]byte, 0, len(tokens))
	for _, tok := range tokens {
		hs = append(hs, sha256.Sum256([]byte(tok)))
	}
	t.hashes.Store(&hs)
}
