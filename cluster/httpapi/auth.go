package httpapi

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
)

// Limits of API tokens.
const (
	// MinTokenLength and MaxTokenLength bound a token, in characters.
	MinTokenLength = 16
	MaxTokenLength = 4096
	// MaxTokenFileBytes bounds a token file.
	MaxTokenFileBytes = 1 << 20
)

// ErrTokenFile reports a token file that cannot be used. Its messages give
// line numbers, never a token.
var ErrTokenFile = errors.New("httpapi: bad token file")

// ParseTokens reads a token file: one token per line; blank lines and
// lines starting with # are skipped; surrounding spaces are trimmed. A
// token is 16 to 4096 printable ASCII characters without spaces. It returns
// the tokens' SHA-256 hashes (the tokens themselves are not kept). A file
// with no token is valid: it refuses every request.
func ParseTokens(r io.Reader) ([][sha256.Size]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxTokenFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTokenFile, err)
	}
	if len(data) > MaxTokenFileBytes {
		return nil, fmt.Errorf("%w: over %d bytes; keep one token per client", ErrTokenFile, MaxTokenFileBytes)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxTokenFileBytes+1)
	var out [][sha256.Size]byte
	for line := 1; sc.Scan(); line++ {
		tok := strings.TrimSpace(sc.Text())
		if tok == "" || strings.HasPrefix(tok, "#") {
			continue
		}
		if err := checkToken(tok); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrTokenFile, line, err)
		}
		out = append(out, sha256.Sum256([]byte(tok)))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTokenFile, err)
	}
	return out, nil
}

// checkToken says what is wrong with a token without quoting it.
func checkToken(tok string) error {
	if n := len(tok); n < MinTokenLength || n > MaxTokenLength {
		return fmt.Errorf("the token has %d characters; use %d to %d (`foreman certs token` makes one)", n, MinTokenLength, MaxTokenLength)
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("character %d of the token is not printable ASCII (spaces and control characters are not allowed)", i+1)
		}
	}
	return nil
}

// NewToken returns a new random token: 32 bytes, base64url (43 characters).
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Tokens is the set of bearer tokens the API accepts, read from a file and
// reloadable. It holds only the tokens' SHA-256 hashes. Safe for
// concurrent use.
type Tokens struct {
	path    string
	hashes  atomic.Pointer[[][sha256.Size]byte]
	revoked revocations // held requests, ended when Reload drops their token (revoke.go)
}

// LoadTokens reads the token file at path (see [ParseTokens]).
func LoadTokens(path string) (*Tokens, error) {
	t := &Tokens{path: path}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// NewTokens returns a fixed set of tokens (for programs and tests that do
// not read a file); each must pass the file's rules.
func NewTokens(tokens ...string) (*Tokens, error) {
	hs := make([][sha256.Size]byte, 0, len(tokens))
	for i, tok := range tokens {
		if err := checkToken(tok); err != nil {
			return nil, fmt.Errorf("%w: token %d: %w", ErrTokenFile, i+1, err)
		}
		hs = append(hs, sha256.Sum256([]byte(tok)))
	}
	t := &Tokens{}
	t.hashes.Store(&hs)
	return t, nil
}

// Reload reads the file again; on error the old set stays in use. A set
// made by NewTokens has no file and does not change. The requests held open
// (result streams and long polls, POST /work?wait) of a token the new file
// no longer has end at once, with 401 when they had not answered yet.
func (t *Tokens) Reload() error {
	if t.path == "" {
		return nil
	}
	f, err := os.Open(t.path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTokenFile, err)
	}
	defer func() { _ = f.Close() }()
	hs, err := ParseTokens(f)
	if err != nil {
		return fmt.Errorf("%s: %w", t.path, err)
	}
	t.hashes.Store(&hs)
	t.revoked.revokeAllBut(hs)
	return nil
}

// Len returns how many tokens are accepted.
func (t *Tokens) Len() int { return len(*t.hashes.Load()) }

// Valid reports whether tok is one of the tokens. It compares the token's
// hash with every hash in constant time, and does not stop at a match, so
// the time taken says nothing about which token, or how much of one,
// matched.
func (t *Tokens) Valid(tok string) bool {
	h := sha256.Sum256([]byte(tok))
	match := 0
	for _, k := range *t.hashes.Load() {
		match |= subtle.ConstantTimeCompare(h[:], k[:])
	}
	return match == 1
}

// WithTokens makes every route but the public ones (/healthz) require
// "Authorization: Bearer TOKEN" with one of tokens. nil: no tokens needed.
func WithTokens(tokens *Tokens) Option { return func(c *config) { c.tokens = tokens } }

// WithTLS serves HTTPS with cfg (e.g. tlsconf.APIServerConfig). nil: plain
// HTTP.
func WithTLS(cfg *tls.Config) Option { return func(c *config) { c.tls = cfg } }

// requireToken answers 401 to a request without a valid bearer token,
// before the handler runs and without reading the body.
func (s *Server) requireToken(next http.Handler) http.Handler {
	tokens := s.cfg.tokens
	if tokens == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, given := bearer(r.Header.Get("Authorization"))
		if given && tokens.Valid(tok) {
			if tokens.path != "" && holdsOpen(r) { // reloadable: a revocation ends it
				s.serveRevocable(next, w, r, tokens, tok)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		challenge := `Bearer realm="foreman"`
		msg := "this API needs a token: send the header Authorization: Bearer TOKEN with a token from the server's --api-token-file"
		if given {
			challenge += `, error="invalid_token"`
			msg = "the bearer token is not valid: ask the operator for a token in the server's --api-token-file"
		}
		h := w.Header()
		h.Set("WWW-Authenticate", challenge)
		// The body is never read: close the connection rather than let
		// the server drain an unauthenticated upload.
		h.Set("Connection", "close")
		writeJSON(w, http.StatusUnauthorized, errorBody{Error: msg})
	})
}

// bearer extracts the token of an "Authorization: Bearer TOKEN" header.
func bearer(h string) (string, bool) {
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	tok := strings.TrimSpace(h[len(prefix):])
	return tok, tok != ""
}
