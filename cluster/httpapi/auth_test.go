package httpapi_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/health"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/tlsconf"
	"github.com/foreman-actors/foreman/cluster/tlsconf/tlsconftest"
	"github.com/foreman-actors/foreman/messages"
)

// recordingBackend answers everything and counts every call, so a test can
// prove a refused request never reached it.
type recordingBackend struct{ calls atomic.Int64 }

func (b *recordingBackend) Submit(context.Context, *messages.Work) error {
	b.calls.Add(1)
	return nil
}

func (b *recordingBackend) WorkStatus(_ context.Context, id string) (*messages.WorkStatusReply, error) {
	b.calls.Add(1)
	return &messages.WorkStatusReply{WorkId: id, Status: messages.WorkStatus_WORK_STATUS_DONE}, nil
}

func (b *recordingBackend) Status(context.Context) (*httpapi.StatusInfo, error) {
	b.calls.Add(1)
	return &httpapi.StatusInfo{}, nil
}

const goodToken = "s3cret-token-for-tests-0123456789"

// requestFor makes a request for a route: a concrete path for its pattern
// and a body for POST.
func requestFor(t *testing.T, rt httpapi.Route, base string) *http.Request {
	t.Helper()
	path := strings.ReplaceAll(rt.Path, "{id}", "job-1")
	if strings.HasSuffix(path, "/") {
		path += "nowhere"
	}
	method := rt.Method
	if method == "" {
		method = http.MethodPatch // the fallbacks answer every other method
	}
	body := strings.NewReader(`{"type":"square","payload":7}`)
	req, err := http.NewRequest(method, base+path, body)
	require.NoError(t, err)
	return req
}

// TestAuth walks every route of the server: without a valid token each
// answers 401 with a JSON error and WWW-Authenticate, and the backend is
// never called; public routes and valid tokens get through.
func TestAuth(t *testing.T) {
	be := &recordingBackend{}
	tokens, err := httpapi.NewTokens(goodToken, "another-client-token-000")
	require.NoError(t, err)
	srv, err := httpapi.New(be, httpapi.WithTokens(tokens), httpapi.WithMetrics(metrics.New()))
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	routes := srv.Routes()
	require.NotEmpty(t, routes)
	var public []string
	for _, rt := range routes {
		if rt.Public {
			public = append(public, rt.Pattern())
		}
	}
	// Only routes that carry no data may be public: the health check, the
	// OpenAPI document and the dashboard's static files.
	require.ElementsMatch(t, []string{
		"GET " + httpapi.PathHealthz, httpapi.PathHealthz,
		"GET " + health.PathLivez, health.PathLivez, "GET " + health.PathReadyz, health.PathReadyz,
		"GET " + httpapi.PathOpenAPI, httpapi.PathOpenAPI,
		"GET " + httpapi.PathUI, "GET " + httpapi.PathUI + "/{file...}", httpapi.PathUI,
	}, public)
	headers := map[string]string{
		"none":         "",
		"not bearer":   "Basic " + goodToken,
		"empty bearer": "Bearer ",
		"wrong":        "Bearer wrong-token-wrong-token-wrong",
		"almost right": "Bearer " + goodToken[:len(goodToken)-1] + "X",
		"prefix":       "Bearer " + goodToken[:20],
		"longer":       "Bearer " + goodToken + "x",
	}
	for _, rt := range routes {
		for name, h := range headers {
			t.Run(rt.Pattern()+"/"+name, func(t *testing.T) {
				req := requestFor(t, rt, ts.URL)
				if h != "" {
					req.Header.Set("Authorization", h)
				}
				resp, err := ts.Client().Do(req)
				require.NoError(t, err)
				data, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if rt.Public {
					require.NotEqual(t, http.StatusUnauthorized, resp.StatusCode)
					return
				}
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, string(data))
				require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				require.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
				var eb struct{ Error string }
				require.NoError(t, json.Unmarshal(data, &eb))
				require.NotEmpty(t, eb.Error)
				require.NotContains(t, string(data), goodToken[:16], "a 401 quotes a token")
			})
		}
	}
	require.Zero(t, be.calls.Load(), "a refused request reached the backend")

	for _, rt := range routes {
		req := requestFor(t, rt, ts.URL)
		req.Header.Set("Authorization", "bearer "+goodToken) // the scheme is case-insensitive
		resp, err := ts.Client().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.NotEqual(t, http.StatusUnauthorized, resp.StatusCode, rt.Pattern())
	}
	require.Positive(t, be.calls.Load())
}

func TestAuthChallengeSaysInvalidToken(t *testing.T) {
	tokens, err := httpapi.NewTokens(goodToken)
	require.NoError(t, err)
	srv, err := httpapi.New(&recordingBackend{}, httpapi.WithTokens(tokens))
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, httpapi.PathStatus, nil)
	srv.Handler().ServeHTTP(rec, req)
	require.Equal(t, `Bearer realm="foreman"`, rec.Header().Get("WWW-Authenticate"))
	rec = httptest.NewRecorder()
	req.Header.Set("Authorization", "Bearer nope-nope-nope-nope")
	srv.Handler().ServeHTTP(rec, req)
	require.Equal(t, `Bearer realm="foreman", error="invalid_token"`, rec.Header().Get("WWW-Authenticate"))
}

func TestParseTokens(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		n       int
		wantErr string
	}{
		{"empty file refuses everything", "", 0, ""},
		{"comments and blanks", "# clients\n\n  " + goodToken + "  \r\n#x\nanother-client-token-000\n", 2, ""},
		{"too short", "# a\nshort-token\n", 0, "line 2: the token has 11 characters"},
		{"space inside", goodToken + " x\n", 0, "line 1: character 34"},
		{"control character", goodToken + "\x01\n", 0, "not printable"},
		{"too long", strings.Repeat("a", httpapi.MaxTokenLength+1), 0, "4097 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs, err := httpapi.ParseTokens(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				require.ErrorIs(t, err, httpapi.ErrTokenFile)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, hs, tt.n)
		})
	}
}

func TestTokensReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(path, []byte(goodToken+"\n"), 0o600))
	tokens, err := httpapi.LoadTokens(path)
	require.NoError(t, err)
	require.True(t, tokens.Valid(goodToken))

	// Revoke by editing the file.
	next := "replacement-token-0123456789"
	require.NoError(t, os.WriteFile(path, []byte(next+"\n"), 0o600))
	require.NoError(t, tokens.Reload())
	require.False(t, tokens.Valid(goodToken))
	require.True(t, tokens.Valid(next))

	// A bad file keeps the old set, and the error names the line, not the token.
	require.NoError(t, os.WriteFile(path, []byte(next+"\nbad-one\n"), 0o600))
	err = tokens.Reload()
	require.ErrorIs(t, err, httpapi.ErrTokenFile)
	require.ErrorContains(t, err, "line 2")
	require.NotContains(t, err.Error(), "bad-one")
	require.True(t, tokens.Valid(next))
	require.Equal(t, 1, tokens.Len())

	_, err = httpapi.LoadTokens(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, httpapi.ErrTokenFile)
}

func FuzzParseTokens(f *testing.F) {
	f.Add("")
	f.Add("# c\n" + goodToken + "\n\n")
	f.Add("short\n")
	f.Add(goodToken + " trailing\r\n")
	f.Add("\xff\xfe" + goodToken)
	f.Fuzz(func(t *testing.T, in string) {
		hs, err := httpapi.ParseTokens(strings.NewReader(in))
		if err != nil {
			require.ErrorIs(t, err, httpapi.ErrTokenFile)
			// An error never quotes a line of the file.
			for _, line := range strings.Split(in, "\n") {
				if l := strings.TrimSpace(line); len(l) >= 8 && !strings.HasPrefix(l, "#") {
					require.NotContains(t, err.Error(), l)
				}
			}
			return
		}
		// Every accepted line is a token that passes; Valid agrees.
		var toks []string
		for _, line := range strings.Split(in, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
				toks = append(toks, l)
			}
		}
		require.Len(t, hs, len(toks))
		if len(toks) > 0 {
			set, err := httpapi.NewTokens(toks...)
			require.NoError(t, err)
			require.True(t, set.Valid(toks[0]))
			require.False(t, set.Valid(toks[0]+"x"))
		}
	})
}

// TestClientTokenAndTLS: the Go client sends its token over HTTPS with the
// node certificate; without a token it gets ErrUnauthorized.
func TestClientTokenAndTLS(t *testing.T) {
	pki := tlsconftest.NewPKI(t, "cluster")
	node := pki.Material(t, "frontend")
	tlsCfg, err := tlsconf.APIServerConfig(node, nil)
	require.NoError(t, err)
	tokens, err := httpapi.NewTokens(goodToken)
	require.NoError(t, err)
	srv, err := httpapi.New(&recordingBackend{}, httpapi.WithAddr("127.0.0.1:0"), httpapi.WithTokens(tokens), httpapi.WithTLS(tlsCfg))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	base := "https://" + srv.Addr()
	trust := &tls.Config{RootCAs: node.Pool(), MinVersion: tls.VersionTLS12}

	c, err := httpapi.NewClient(base, httpapi.WithTLSConfig(trust), httpapi.WithToken(goodToken))
	require.NoError(t, err)
	id, err := c.Submit(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("7")})
	require.NoError(t, err)
	info, err := c.Work(ctx, id)
	require.NoError(t, err)
	require.Equal(t, httpapi.StatusDone, info.Status)

	sc, err := c.NewSubmitConn() // its own connection: TLS and the token too
	require.NoError(t, err)
	id, err = sc.Submit(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("7")})
	require.NoError(t, err)
	require.NotEmpty(t, id)
	require.NoError(t, sc.Close())

	anon, err := httpapi.NewClient(base, httpapi.WithTLSConfig(trust))
	require.NoError(t, err)
	_, err = anon.Status(ctx)
	require.ErrorIs(t, err, httpapi.ErrUnauthorized)
	anonConn, err := anon.NewSubmitConn()
	require.NoError(t, err)
	_, err = anonConn.Submit(ctx, httpapi.SubmitRequest{Type: "square"})
	require.ErrorIs(t, err, httpapi.ErrUnauthorized)
	require.NoError(t, anonConn.Close())

	untrusting, err := httpapi.NewClient(base, httpapi.WithToken(goodToken))
	require.NoError(t, err)
	_, err = untrusting.Status(ctx)
	require.ErrorContains(t, err, "certificate", "a client that does not trust the CA must not connect")

	_, err = httpapi.NewClient(base, httpapi.WithToken("short"))
	require.ErrorIs(t, err, httpapi.ErrInvalidOption)
}

func BenchmarkTokensValid(b *testing.B) {
	for _, n := range []int{1, 10, 1000} {
		toks := make([]string, n)
		for i := range toks {
			toks[i] = fmt.Sprintf("token-%08d-abcdefghijklmnop", i)
		}
		set, err := httpapi.NewTokens(toks...)
		require.NoError(b, err)
		b.Run(fmt.Sprintf("tokens=%d", n), func(b *testing.B) {
			for b.Loop() {
				if !set.Valid(toks[n-1]) {
					b.Fatal("not valid")
				}
			}
		})
	}
}
