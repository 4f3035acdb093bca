package httpapi

import (
	"crypto/sha256"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// DefaultFeedReadsPerClient is how many result-feed reads (GET /results,
// GET /results/stream) one client may have open at once on a server: a
// bearer token when the server has tokens, else a client IP address. Each
// open read holds one of the master's reader slots (256, shared by every
// frontend and its result consumer), so one client's long polls cannot
// take them all; beyond its share a client gets 429 with Retry-After.
const DefaultFeedReadsPerClient = 16

// WithFeedReadsPerClient sets how many result-feed reads one client (token,
// or IP address without tokens) may have open at once (default
// DefaultFeedReadsPerClient); more are answered 429 with Retry-After.
func WithFeedReadsPerClient(n int) Option { return func(c *config) { c.feedPerClient = n } }

// feedShares counts the open feed reads of each client.
type feedShares struct {
	mu   sync.Mutex
	open map[string]int
}

// take counts one more read of key, unless it has max open: false then.
func (f *feedShares) take(key string, maxOpen int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open[key] >= maxOpen {
		return false
	}
	if f.open == nil {
		f.open = make(map[string]int)
	}
	f.open[key]++
	return true
}

// give ends one read of key.
func (f *feedShares) give(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open[key]--; f.open[key] <= 0 {
		delete(f.open, key)
	}
}

// feedClient names the client of r for its share: the hash of its bearer
// token when the server checks tokens (requireToken let it through), else
// its IP address.
func (s *Server) feedClient(r *http.Request) string {
	if s.cfg.tokens != nil {
		if tok, ok := bearer(r.Header.Get("Authorization")); ok {
			h := sha256.Sum256([]byte(tok))
			return "token " + string(h[:])
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr " + host
}

// takeFeedShare counts a feed read of r's client; when the client already
// has its share open it answers 429 with Retry-After and returns false.
// Call release once the read ended.
func (s *Server) takeFeedShare(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	key := s.feedClient(r)
	if !s.feeds.take(key, s.cfg.feedPerClient) {
		secs := int(math.Ceil(s.cfg.retryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		s.log.Debug("result-feed read over its client's share", "path", r.URL.Path, "share", s.cfg.feedPerClient)
		writeJSON(w, http.StatusTooManyRequests, errorBody{Error: fmt.Sprintf(
			"this client already has %d result-feed reads open, its share of the master's readers; "+
				"follow the feed with one reader (its next read after the last), or retry after %d s", s.cfg.feedPerClient, secs)})
		return nil, false
	}
	return func() { s.feeds.give(key) }, true
}
