package httpapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"sync"
)

// Revocation: a token removed from the token file (Tokens.Reload, which
// SIGHUP runs) ends the requests of that token that are held open, the
// result stream, result long polls and POST /work?wait, at once: their
// context is cancelled, as when their client disconnects, and one that had
// not written its answer yet gets 401. Shorter requests finish as they
// are; the token's next request gets 401.

// errTokenRevoked is the cause of a held request's context when its token
// was revoked.
var errTokenRevoked = errors.New("httpapi: the bearer token was revoked")

// revocations are the held requests of each token (by its hash), for
// Reload to end those of tokens it removed.
type revocations struct {
	mu   sync.Mutex
	held map[[sha256.Size]byte]map[*revocable]struct{}
}

// revocable is one held request; cancel ends it.
type revocable struct {
	cancel func()
}

// add records a held request of the token hash h until the returned
// function is called.
func (v *revocations) add(h [sha256.Size]byte, cancel func()) (remove func()) {
	r := &revocable{cancel: cancel}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.held == nil {
		v.held = make(map[[sha256.Size]byte]map[*revocable]struct{})
	}
	rs := v.held[h]
	if rs == nil {
		rs = make(map[*revocable]struct{}, 1)
		v.held[h] = rs
	}
	rs[r] = struct{}{}
	return func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		if rs := v.held[h]; rs != nil {
			delete(rs, r)
			if len(rs) == 0 {
				delete(v.held, h)
			}
		}
	}
}

// revokeAllBut ends the held requests of every token not in valid.
func (v *revocations) revokeAllBut(valid [][sha256.Size]byte) {
	keep := make(map[[sha256.Size]byte]bool, len(valid))
	for _, h := range valid {
		keep[h] = true
	}
	v.mu.Lock()
	var ended []*revocable
	for h, rs := range v.held {
		if keep[h] {
			continue
		}
		for r := range rs {
			ended = append(ended, r)
		}
		delete(v.held, h)
	}
	v.mu.Unlock()
	for _, r := range ended {
		r.cancel()
	}
}

// holdsOpen reports whether r is a request the server may hold open for
// long: a result read or a submission that waits.
func holdsOpen(r *http.Request) bool {
	switch r.URL.Path {
	case PathResults, PathResultsStream:
		return true
	case PathWork:
		return r.Method == http.MethodPost && wantsWait(r)
	}
	return false
}

// serveRevocable serves a held request of the valid token tok with a
// context that ends, with cause errTokenRevoked, when tok is revoked. The
// handlers answer such a request as one whose client left, except that
// one that has not answered yet answers 401 (unauthorized).
func (s *Server) serveRevocable(next http.Handler, w http.ResponseWriter, r *http.Request, tokens *Tokens, tok string) {
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	remove := tokens.revoked.add(sha256.Sum256([]byte(tok)), func() { cancel(errTokenRevoked) })
	defer remove()
	// Reload cancels a dropped token's held requests one after another,
	// and cancelling one (its waited job) can answer another of them (a
	// long poll reads that job's outcome) before its own cancel runs: so
	// revoked also asks the token set, which Reload changes first.
	ctx = context.WithValue(ctx, heldTokenKey{}, heldToken{tokens: tokens, tok: tok})
	r = r.WithContext(ctx)
	if !tokens.Valid(tok) { // revoked between the check and add
		cancel(errTokenRevoked)
		s.leftOrRevoked(w, r)
		return
	}
	next.ServeHTTP(w, r)
	if revoked(r) {
		s.log.Info("held request ended: its bearer token was revoked", "method", r.Method, "path", r.URL.Path)
	}
}

// heldTokenKey is the context key of a held request's heldToken.
type heldTokenKey struct{}

// heldToken is the token a held request came with, and the set that
// accepted it.
type heldToken struct {
	tokens *Tokens
	tok    string
}

// revoked reports whether r's token was revoked: its context ended for
// that reason, or the token set no longer has it (a Reload that has not
// reached r's cancel yet).
func revoked(r *http.Request) bool {
	ctx := r.Context()
	if errors.Is(context.Cause(ctx), errTokenRevoked) {
		return true
	}
	h, ok := ctx.Value(heldTokenKey{}).(heldToken)
	return ok && !h.tokens.Valid(h.tok)
}

// leftOrRevoked answers a held request whose context ended before it
// answered: nothing when its client left (no one reads it), 401 when its
// token was revoked.
func (s *Server) leftOrRevoked(w http.ResponseWriter, r *http.Request) {
	if !revoked(r) {
		return
	}
	h := w.Header()
	h.Set("WWW-Authenticate", `Bearer realm="foreman", error="invalid_token"`)
	h.Set("Connection", "close")
	writeJSON(w, http.StatusUnauthorized, errorBody{Error: "the bearer token was revoked while the request was held: ask the operator for a token in the server's --api-token-file"})
}
