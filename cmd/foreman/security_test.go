package main

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/cluster/tlsconf/tlsconftest"
)

var tlsFlags = []string{"--tls-cert", "n.crt", "--tls-key", "n.key", "--tls-ca", "ca.crt"}

func withTLS(args ...string) []string { return append(append([]string{}, args...), tlsFlags...) }

// TestSecurityFlags: which binds need TLS, tokens or --insecure, and what
// --insecure reports as exposed.
func TestSecurityFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		args        []string
		wantErr     string // empty: must parse
		wantExposed []string
	}{
		{name: "DefaultsOnLoopback", args: []string{"2551"}},
		{name: "FrontendOnLoopback", args: []string{"3001"}},
		{name: "AllInOneHTTPOnLoopback", args: []string{"--http", "127.0.0.1:8080"}},
		{name: "LocalhostIsLoopback", args: []string{"2551", "--host", "localhost"}},
		{name: "IPv6Loopback", args: []string{"2551", "--host", "::1"}},
		{name: "BackendPublicPlain", args: []string{"2551", "--host", "10.0.0.5"}, wantErr: "gRPC and membership on 10.0.0.5 without TLS"},
		{name: "WildcardIsNotLoopback", args: []string{"0", "--host", "0.0.0.0"}, wantErr: "--insecure"},
		{name: "BackendPublicTLS", args: withTLS("2551", "--host", "10.0.0.5")},
		{name: "BackendPublicInsecure", args: []string{"2551", "--host", "10.0.0.5", "--insecure"}, wantExposed: []string{"gRPC and membership on 10.0.0.5"}},
		{name: "FrontendPublicTLSNoTokens", args: withTLS("3001", "--host", "10.0.0.5"), wantErr: "without tokens"},
		{name: "FrontendPublicTLSAndTokens", args: withTLS("3001", "--host", "10.0.0.5", "--api-token-file", "t")},
		{name: "FrontendHTTPPublicOnlyTokens", args: []string{"3001", "--http", "0.0.0.0:8001", "--api-token-file", "t"}, wantErr: "the HTTP API on 0.0.0.0:8001 without TLS"},
		{name: "FrontendHTTPPublicCertAndTokens", args: []string{"3001", "--http", "0.0.0.0:8001", "--api-token-file", "t", "--http-tls-cert", "p.crt", "--http-tls-key", "p.key"}},
		{name: "AllInOneHTTPPublicInsecure", args: []string{"--http", ":8080", "--insecure"}, wantExposed: []string{"the HTTP API on :8080 without TLS", "the HTTP API on :8080 without tokens"}},
		{name: "TLSIncomplete", args: []string{"2551", "--tls-cert", "n.crt"}, wantErr: "go together"},
		{name: "HTTPCertWithoutKey", args: []string{"3001", "--http-tls-cert", "p.crt"}, wantErr: "--http-tls-cert and --http-tls-key go together"},
		{name: "TokensOnAWorker", args: []string{"0", "--api-token-file", "t"}, wantErr: "serves the HTTP API"},
		{name: "InsecureWithNothingExposed", args: []string{"2551", "--insecure"}},
		{name: "EtcdLoopbackPlain", args: []string{"2551", "--membership", "etcd://127.0.0.1:2379"}},
		{name: "EtcdLocalhostPlain", args: []string{"0", "--membership", "etcd://localhost"}},
		{name: "EtcdPublicPlain", args: []string{"2551", "--membership", "etcd://10.0.0.9:2379"}, wantErr: "membership through etcd at etcd://10.0.0.9:2379 without TLS"},
		{name: "EtcdOneEndpointPublic", args: []string{"3001", "--membership", "etcd://127.0.0.1:2379,e2"}, wantErr: "membership through etcd at etcd://127.0.0.1:2379,e2:2379 without TLS"},
		{name: "EtcdPublicInsecure", args: []string{"2551", "--membership", "etcd://10.0.0.9:2379", "--insecure"}, wantExposed: []string{"membership through etcd at etcd://10.0.0.9:2379 without TLS"}},
		{name: "EtcdAndBindPublicInsecure", args: []string{"2551", "--host", "10.0.0.5", "--membership", "etcd://10.0.0.9:2379", "--insecure"}, wantExposed: []string{"gRPC and membership on 10.0.0.5", "membership through etcd at etcd://10.0.0.9:2379"}},
		{name: "EtcdPublicTLS", args: withTLS("2551", "--membership", "etcd://10.0.0.9:2379")},
		{name: "EtcdCAWithTLS", args: withTLS("0", "--membership", "etcd://10.0.0.9:2379", "--etcd-ca", "etcd-ca.crt")},
		{name: "EtcdCAWithoutTLS", args: []string{"2551", "--membership", "etcd://127.0.0.1:2379", "--etcd-ca", "etcd-ca.crt"}, wantErr: "--etcd-ca needs --tls-cert/--tls-key/--tls-ca"},
		{name: "MetricsOnLoopback", args: []string{"2551", "--metrics", "9100"}},
		{name: "MetricsOnLocalhost", args: []string{"0", "--metrics", "localhost:9100"}},
		{name: "MetricsPublicPlain", args: []string{"2551", "--metrics", "0.0.0.0:9100"}, wantErr: "metrics (--metrics) on 0.0.0.0:9100 without TLS"},
		{name: "MetricsPublicPlainOnAllInOne", args: []string{"--metrics", "10.0.0.5:9100"}, wantErr: "metrics (--metrics) on 10.0.0.5:9100 without TLS"},
		{name: "MetricsPublicInsecure", args: []string{"0", "--metrics", "0.0.0.0:9100", "--insecure"}, wantExposed: []string{"metrics (--metrics) on 0.0.0.0:9100 without TLS"}},
		{name: "MetricsPublicTLS", args: withTLS("2551", "--metrics", "0.0.0.0:9100")},
		{name: "MetricsPublicTLSAndTokensOnABackend", args: withTLS("2551", "--metrics", "0.0.0.0:9100", "--api-token-file", "t")},
		{name: "MetricsPublicOwnCert", args: []string{"0", "--metrics", "0.0.0.0:9100", "--http-tls-cert", "p.crt", "--http-tls-key", "p.key"}},
		{name: "FrontendMetricsPublicPlainAPIOnTLS", args: withTLS("3001", "--api-token-file", "t", "--metrics", "0.0.0.0:9100")},
		{name: "TokensOnAWorkerWithMetrics", args: []string{"0", "--metrics", "9100", "--api-token-file", "t"}},
		{name: "EtcdCAWithSeeds", args: withTLS("2551", "--etcd-ca", "etcd-ca.crt"), wantErr: "--etcd-ca is for etcd membership"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := parseNodeArgs(tt.args, func(string) string { return "" }, io.Discard)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, errUsage)
				require.ErrorContains(t, err, tt.wantErr)
				if strings.Contains(tt.wantErr, "without") {
					require.ErrorContains(t, err, "--insecure", "the error names the opt-out")
				}
				return
			}
			require.NoError(t, err)
			exposed, err := checkSecurity(a)
			require.NoError(t, err)
			require.Len(t, exposed, len(tt.wantExposed))
			for i, w := range tt.wantExposed {
				require.Contains(t, exposed[i], w)
			}
		})
	}
}

// FuzzSecurityFlags: whatever host, HTTP address, metrics address and
// security flags a node is given, a command line accepted without
// --insecure binds only loopback or is fully protected (TLS between nodes;
// TLS and tokens on the API; TLS on --metrics).
func FuzzSecurityFlags(f *testing.F) {
	f.Add("2551", "127.0.0.1", "", "", false, false, false, false)
	f.Add("3001", "10.0.0.1", "", "9100", true, false, true, false)
	f.Add("3001", "10.0.0.1", "0.0.0.0:80", "", true, true, false, false)
	f.Add("", "::1", ":8080", "0.0.0.0:9100", false, false, true, true)
	f.Add("0", "", "", "10.0.0.1:9100", false, false, false, false)
	f.Fuzz(func(t *testing.T, port, host, http, metricsAt string, tls, httpCert, tokens, insecure bool) {
		args := []string{}
		if port != "" {
			args = append(args, port)
		}
		args = append(args, "--host", host)
		if http != "" {
			args = append(args, "--http", http)
		}
		if metricsAt != "" {
			args = append(args, "--metrics", metricsAt)
		}
		if tls {
			args = append(args, tlsFlags...)
		}
		if httpCert {
			args = append(args, "--http-tls-cert", "p.crt", "--http-tls-key", "p.key")
		}
		if tokens {
			args = append(args, "--api-token-file", "t")
		}
		if insecure {
			args = append(args, "--insecure")
		}
		a, err := parseNodeArgs(args, func(string) string { return "" }, io.Discard)
		if err != nil || insecure {
			return
		}
		if a.role != node.RoleAll && !isLoopback(a.host) {
			require.True(t, a.sec.nodeTLS(), "accepted %v: a public gRPC bind without TLS", args)
		}
		if addr := a.httpAddr(); addr != "" {
			h, _, err := net.SplitHostPort(addr)
			require.NoError(t, err)
			if !isLoopback(h) {
				require.True(t, a.sec.httpTLS() && a.sec.tokenFile != "", "accepted %v: a public HTTP API without TLS and tokens", args)
			}
		}
		if a.metrics != "" {
			addr, err := metrics.ListenAddr(a.metrics)
			require.NoError(t, err)
			if h, _, _ := net.SplitHostPort(addr); !isLoopback(h) {
				require.True(t, a.sec.httpTLS(), "accepted %v: public metrics without TLS", args)
			}
		}
	})
}

// TestLoadSecurityWarns: a key readable by others and a certificate that
// expires within 14 days each give a WARN at start; a good set gives Info.
func TestLoadSecurityWarns(t *testing.T) {
	pki := tlsconftest.NewPKI(t, "cluster")
	f := pki.Files(t, "node")
	tokens := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("a-token-for-the-test-0001\n"), 0o644))
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	sec, err := loadSecurity(securityArgs{tlsCert: f.Cert, tlsKey: f.Key, tlsCA: f.CA, tokenFile: tokens}, log)
	require.NoError(t, err)
	out := buf.String()
	// The test certificate is valid for an hour: it expires soon.
	require.Contains(t, out, "node certificate expires soon")
	require.Contains(t, out, "serial="+sec.node.Leaf().SerialNumber.Text(16))
	require.Contains(t, out, "a secret file is readable by others")
	require.Contains(t, out, "API tokens loaded")
	require.NotContains(t, out, "a-token-for-the-test")

	// SIGHUP's reload: one Info per file; a bad token file one Error, the old set kept.
	buf.Reset()
	require.NoError(t, sec.reload(log))
	require.Equal(t, 1, strings.Count(buf.String(), "node certificate reloaded"))
	require.Equal(t, 1, strings.Count(buf.String(), "API tokens reloaded"))
	require.NoError(t, os.WriteFile(tokens, []byte("short\n"), 0o600))
	buf.Reset()
	require.Error(t, sec.reload(log))
	require.Equal(t, 1, strings.Count(buf.String(), "level=ERROR"))
	require.True(t, sec.tokens.Valid("a-token-for-the-test-0001"))
}
