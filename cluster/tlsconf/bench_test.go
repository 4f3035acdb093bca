package tlsconf_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/tlsconf/tlsconftest"
)

// BenchmarkMutualHandshake measures a new loopback connection with a
// 1-byte echo, plain and with a mutual TLS handshake (ECDSA P-256, the
// certificates `foreman certs` makes). It is what a node pays once per
// connection; node connections are long-lived.
func BenchmarkMutualHandshake(b *testing.B) {
	pki := tlsconftest.NewPKI(b, "bench")
	server, client := pki.Material(b, "server"), pki.Material(b, "client")
	echo := func(ln net.Listener) {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_, _ = io.Copy(c, c)
			}()
		}
	}
	run := func(b *testing.B, addr string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
		buf := make([]byte, 1)
		for b.Loop() {
			c, err := dial(context.Background(), "tcp", addr)
			require.NoError(b, err)
			_, err = c.Write(buf)
			require.NoError(b, err)
			_, err = io.ReadFull(c, buf)
			require.NoError(b, err)
			_ = c.Close()
		}
	}
	b.Run("plain", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(b, err)
		defer func() { _ = ln.Close() }()
		go echo(ln)
		run(b, ln.Addr().String(), (&net.Dialer{}).DialContext)
	})
	b.Run("mtls", func(b *testing.B) {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", server.ServerConfig())
		require.NoError(b, err)
		defer func() { _ = ln.Close() }()
		go echo(ln)
		run(b, ln.Addr().String(), client.DialTLSContext(nil))
	})
}
