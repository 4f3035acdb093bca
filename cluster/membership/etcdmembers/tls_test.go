package etcdmembers

import (
	"crypto/tls"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/membership/etcdmembers/etcdtest"
)

// TestTLS: with WithTLS a node registers with an etcd that serves TLS only
// and requires client certificates; every mistake fails the start with an
// error that says what the TLS problem is, never falling back to plain.
func TestTLS(t *testing.T) {
	certs := etcdtest.NewCerts(t)
	srv := etcdtest.Start(t, etcdtest.WithTLS(certs))
	plain := etcdtest.Start(t)

	a := startNode(t, srv, "a", 2551, true, WithTLS(certs.ClientTLS()))
	b := startNode(t, srv, "b", 2552, true, WithTLS(certs.ClientTLS()))
	eventually(t, "a sees b over TLS", hasMembers(a, "a", "b"))
	require.NoError(t, b.Shutdown(true))
	eventually(t, "a sees b leave", hasMembers(a, "a"))

	otherCA := certs.ClientTLS()
	otherCA.RootCAs = etcdtest.OtherCA(t)
	noClientCert := certs.ClientTLS()
	noClientCert.Certificates = nil
	tests := []struct {
		name    string
		srv     *etcdtest.Server
		tls     *tls.Config
		wantErr string
	}{
		{"a CA that did not sign etcd's certificate", srv, otherCA, "certificate signed by unknown authority"},
		{"no client certificate", srv, noClientCert, "refused this node's TLS connection"},
		{"plain text to a TLS etcd", srv, nil, "answers only over TLS"},
		{"TLS to a plain etcd", plain, certs.ClientTLS(), "the TLS handshake with " + plain.Endpoint() + " failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []Option{WithStartTimeout(time.Second)}
			if tt.tls != nil {
				opts = append(opts, WithTLS(tt.tls))
			}
			p, err := New([]string{tt.srv.Endpoint()}, opts...)
			require.NoError(t, err)
			err = p.start(node("x", 2553), true, "c", &recorder{}, nil, slog.New(slog.DiscardHandler))
			require.ErrorIs(t, err, ErrStart)
			require.ErrorContains(t, err, tt.wantErr)
			t.Log(err)
		})
	}
}

func TestWithTLSNil(t *testing.T) {
	t.Parallel()
	_, err := New([]string{"h"}, WithTLS(nil))
	require.ErrorIs(t, err, ErrInvalidOption)
	require.ErrorContains(t, err, "WithTLS(nil)")
}
