package httpapi_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// authSeen is a server that answers every request as the API would and
// records the Authorization headers it was sent.
type authSeen struct {
	mu   sync.Mutex
	auth []string
}

func (a *authSeen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.auth = append(a.auth, r.Header.Get("Authorization"))
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodPost {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"x"}`))
		return
	}
	_, _ = w.Write([]byte(`{"members":[]}`))
}

func (a *authSeen) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.auth...)
}

// redirectTo answers every request with a 307 to target + the request's
// path, except the paths in serve, which next answers.
func redirectTo(target string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("moved") == "1" {
			next.ServeHTTP(w, r)
			return
		}
		http.Redirect(w, r, target+r.URL.Path+"?moved=1", http.StatusTemporaryRedirect)
	})
}

// TestClientTokenStaysWithItsOrigin: the Go client sends its bearer token
// only to the origin (scheme, host, port) it was made for. A redirect to
// another host, or from https to http, fails with an error that says so,
// and the other server never sees the token; a redirect within the origin
// is followed with the token.
func TestClientTokenStaysWithItsOrigin(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	elsewhere := &authSeen{}
	other := httptest.NewServer(elsewhere) // another port: another origin
	t.Cleanup(other.Close)
	plainOther := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)

	home := &authSeen{}
	// Plain API redirecting to another host.
	toOther := httptest.NewServer(redirectTo(plainOther, home))
	t.Cleanup(toOther.Close)
	// HTTPS API redirecting to plain HTTP.
	toPlain := httptest.NewTLSServer(redirectTo(other.URL, home))
	t.Cleanup(toPlain.Close)
	// An API redirecting within itself.
	var self *httptest.Server
	self = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirectTo(self.URL, home).ServeHTTP(w, r)
	}))
	t.Cleanup(self.Close)
	trust := &tls.Config{RootCAs: toPlain.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, MinVersion: tls.VersionTLS12}

	for _, tc := range []struct {
		name string
		base string
		opts []httpapi.ClientOption
	}{
		{name: "ToAnotherHost", base: toOther.URL},
		{name: "HTTPSToHTTP", base: toPlain.URL, opts: []httpapi.ClientOption{httpapi.WithTLSConfig(trust)}},
		{name: "CallersHTTPClient", base: toOther.URL, opts: []httpapi.ClientOption{httpapi.WithHTTPClient(&http.Client{})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := httpapi.NewClient(tc.base, append(tc.opts, httpapi.WithToken(goodToken))...)
			require.NoError(t, err)
			t.Cleanup(c.CloseIdleConnections)
			_, err = c.Status(ctx)
			require.ErrorIs(t, err, httpapi.ErrRedirected)
			require.ErrorContains(t, err, "redirected GET /status to http://")
			require.ErrorContains(t, err, "the token is sent only to "+tc.base)
			_, err = c.Submit(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("1")})
			require.ErrorIs(t, err, httpapi.ErrRedirected)
			_, err = c.SubmitMany(ctx, []httpapi.SubmitRequest{{Type: "square"}})
			require.ErrorIs(t, err, httpapi.ErrRedirected)
			for _, a := range elsewhere.seen() {
				require.NotContains(t, a, goodToken, "the token reached another origin")
			}
		})
	}

	t.Run("WithinTheOrigin", func(t *testing.T) {
		c, err := httpapi.NewClient(self.URL, httpapi.WithToken(goodToken))
		require.NoError(t, err)
		t.Cleanup(c.CloseIdleConnections)
		before := len(home.seen())
		_, err = c.Status(ctx)
		require.NoError(t, err)
		seen := home.seen()
		require.Len(t, seen, before+1)
		require.Equal(t, "Bearer "+goodToken, seen[len(seen)-1])
	})
	require.Empty(t, elsewhere.seen(), "the other origin was asked at all")
}
