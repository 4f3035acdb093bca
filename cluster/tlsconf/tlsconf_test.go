package tlsconf_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/tlsconf"
	"github.com/foreman-actors/foreman/cluster/tlsconf/tlsconftest"
)

// echoServer serves a 1-byte echo over cfg on loopback until the test ends.
func echoServer(t testing.TB, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
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
	}()
	return ln.Addr().String()
}

// roundTrip dials addr (as host:port of the listener, with host as the
// name dialled) and echoes one byte; it returns the server's certificate
// serial. Under TLS 1.3 a refused client certificate shows only at the
// first read, so the echo is part of the check.
func roundTrip(host, addr string, m *tlsconf.Material) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	var c *tls.Conn
	if m != nil {
		c = tls.Client(raw, m.ClientConfigFor(host))
	} else {
		// No client certificate, but trusting nothing else either.
		c = tls.Client(raw, &tls.Config{ServerName: host, InsecureSkipVerify: true}) //nolint:gosec // the client side is not under test
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := c.HandshakeContext(ctx); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte{7}); err != nil {
		return "", err
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		return "", err
	}
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

func TestHandshakes(t *testing.T) {
	pki := tlsconftest.NewPKI(t, "cluster")
	other := tlsconftest.NewPKI(t, "rogue")
	server := pki.Material(t, "server")
	addr := echoServer(t, server.ServerConfig())

	tests := []struct {
		name   string
		client *tlsconf.Material
		host   string
		ok     bool
	}{
		{"same CA", pki.Material(t, "client"), "127.0.0.1", true},
		{"client of another CA", other.Material(t, "stranger"), "127.0.0.1", false},
		{"client without a certificate", nil, "127.0.0.1", false},
		{"host not in the server's SANs", pki.Material(t, "client2"), "localhost", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serial, err := roundTrip(tt.host, addr, tt.client)
			if tt.ok {
				require.NoError(t, err)
				require.Equal(t, server.Leaf().SerialNumber.String(), serial)
			} else {
				require.Error(t, err)
			}
		})
	}

	t.Run("server of another CA", func(t *testing.T) {
		rogueAddr := echoServer(t, other.Material(t, "rogue-server").ServerConfig())
		_, err := roundTrip("127.0.0.1", rogueAddr, pki.Material(t, "client3"))
		require.ErrorContains(t, err, "certificate signed by unknown authority")
	})
}

func TestDialTLSContextChecksTheHost(t *testing.T) {
	pki := tlsconftest.NewPKI(t, "cluster")
	addr := echoServer(t, pki.Material(t, "server").ServerConfig())
	client := pki.Material(t, "client")
	c, err := client.DialTLSContext(nil)(context.Background(), "tcp", addr)
	require.NoError(t, err)
	_ = c.Close()
	_, port, _ := net.SplitHostPort(addr)
	_, err = client.DialTLSContext(nil)(context.Background(), "tcp", net.JoinHostPort("localhost", port))
	require.ErrorContains(t, err, "wanted to match localhost")
}

func TestReloadIsSeenByNewConnections(t *testing.T) {
	pki := tlsconftest.NewPKI(t, "cluster")
	f := pki.Files(t, "server")
	server, err := tlsconf.Load(f.Cert, f.Key, f.CA)
	require.NoError(t, err)
	addr := echoServer(t, server.ServerConfig())
	client := pki.Material(t, "client")

	first, err := roundTrip("127.0.0.1", addr, client)
	require.NoError(t, err)

	pki.Files(t, "server") // a new certificate and key in the same files
	require.NoError(t, server.Reload())
	second, err := roundTrip("127.0.0.1", addr, client)
	require.NoError(t, err)
	require.NotEqual(t, first, second, "a new connection must see the reloaded certificate")
	require.Equal(t, server.Leaf().SerialNumber.String(), second)

	// A bad file keeps the old material.
	require.NoError(t, os.WriteFile(f.Key, []byte("not a key"), 0o600))
	err = server.Reload()
	require.ErrorIs(t, err, tlsconf.ErrMaterial)
	require.ErrorContains(t, err, f.Key)
	third, err := roundTrip("127.0.0.1", addr, client)
	require.NoError(t, err)
	require.Equal(t, second, third)
}

func TestCABundleRotation(t *testing.T) {
	oldCA := tlsconftest.NewPKI(t, "old")
	newCA := tlsconftest.NewPKI(t, "new")
	bundle := filepath.Join(t.TempDir(), "bundle.crt")
	require.NoError(t, os.WriteFile(bundle, append(oldCA.CertPEM(), newCA.CertPEM()...), 0o600))

	sf := oldCA.Files(t, "server")
	server, err := tlsconf.Load(sf.Cert, sf.Key, sf.CA)
	require.NoError(t, err)
	addr := echoServer(t, server.ServerConfig())
	nf := newCA.Files(t, "client")
	newClient, err := tlsconf.Load(nf.Cert, nf.Key, bundle)
	require.NoError(t, err)

	_, err = roundTrip("127.0.0.1", addr, newClient)
	require.Error(t, err, "the server does not trust the new CA yet")

	// Step 1: every node trusts the bundle.
	serverBundle := tlsconf.Files{Cert: sf.Cert, Key: sf.Key, CA: filepath.Join(oldCA.Dir, "trust.crt")}
	require.NoError(t, os.WriteFile(serverBundle.CA, append(oldCA.CertPEM(), newCA.CertPEM()...), 0o600))
	server, err = tlsconf.Load(serverBundle.Cert, serverBundle.Key, serverBundle.CA)
	require.NoError(t, err)
	addr = echoServer(t, server.ServerConfig())
	_, err = roundTrip("127.0.0.1", addr, newClient)
	require.NoError(t, err, "a new-CA client reaches an old-CA server that trusts the bundle")

	// Step 2: the server gets a new-CA certificate, and then trusts only the new CA.
	fresh := newCA.Files(t, "server")
	require.NoError(t, os.Rename(fresh.Cert, serverBundle.Cert))
	require.NoError(t, os.Rename(fresh.Key, serverBundle.Key))
	require.NoError(t, os.WriteFile(serverBundle.CA, newCA.CertPEM(), 0o600))
	require.NoError(t, server.Reload())
	_, err = roundTrip("127.0.0.1", addr, newClient)
	require.NoError(t, err)
	oldClient := oldCA.Material(t, "old-client")
	_, err = roundTrip("127.0.0.1", addr, oldClient)
	require.Error(t, err, "after the rotation an old-CA client is refused")
}

func TestLoadErrors(t *testing.T) {
	pki := tlsconftest.NewPKI(t, "cluster")
	other := tlsconftest.NewPKI(t, "other")
	good := pki.Files(t, "node")
	stranger := other.Files(t, "stranger")
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		return b
	}
	caWithKey := write("ca-with-key.crt", append(pki.CertPEM(), read(good.Key)...))
	expiredCert, expiredKey, err := pki.Issue("old", []string{"127.0.0.1"}, -time.Hour)
	require.NoError(t, err)

	tests := []struct {
		name      string
		f         tlsconf.Files
		wantFile  string
		wantWords string
	}{
		{"missing certificate", tlsconf.Files{Cert: filepath.Join(dir, "none.crt"), Key: good.Key, CA: good.CA}, "none.crt", "cannot read"},
		{"missing CA", tlsconf.Files{Cert: good.Cert, Key: good.Key, CA: filepath.Join(dir, "none-ca.crt")}, "none-ca.crt", "foreman certs ca"},
		{"certificate not PEM", tlsconf.Files{Cert: write("junk.crt", []byte("junk")), Key: good.Key, CA: good.CA}, "junk.crt", "no PEM CERTIFICATE"},
		{"key of another certificate", tlsconf.Files{Cert: good.Cert, Key: stranger.Key, CA: good.CA}, stranger.Key, "does not go with"},
		{"not signed by the CA", tlsconf.Files{Cert: stranger.Cert, Key: stranger.Key, CA: good.CA}, stranger.Cert, "not signed by the CA"},
		{"CA file with a private key", tlsconf.Files{Cert: good.Cert, Key: good.Key, CA: caWithKey}, caWithKey, "holds a private key"},
		{"expired", tlsconf.Files{Cert: write("old.crt", expiredCert), Key: write("old.key", expiredKey), CA: good.CA}, "old.crt", "expired"},
		{"CA empty", tlsconf.Files{Cert: good.Cert, Key: good.Key, CA: write("empty.crt", nil)}, "empty.crt", "no PEM CERTIFICATE"},
		{"a file not given", tlsconf.Files{Cert: good.Cert, Key: good.Key}, "", "all needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tlsconf.Load(tt.f.Cert, tt.f.Key, tt.f.CA)
			require.ErrorIs(t, err, tlsconf.ErrMaterial)
			require.ErrorContains(t, err, tt.wantFile)
			require.ErrorContains(t, err, tt.wantWords)
		})
	}
	_, err = tlsconf.Load(good.Cert, good.Key, good.CA)
	require.NoError(t, err)
}

func TestWritePairNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "a.crt"), filepath.Join(dir, "a.key")
	require.NoError(t, tlsconf.WritePair(cert, key, []byte("c"), []byte("k")))
	st, err := os.Stat(key)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	err = tlsconf.WritePair(cert, filepath.Join(dir, "b.key"), []byte("c2"), []byte("k2"))
	require.ErrorContains(t, err, "already exists")
	_, err = os.Stat(filepath.Join(dir, "b.key"))
	require.True(t, errors.Is(err, os.ErrNotExist), "nothing is written when one file exists")
	b, _ := os.ReadFile(cert)
	require.Equal(t, "c", string(b))
}

func TestLoadCA(t *testing.T) {
	ca, err := tlsconf.NewCA("c", time.Hour)
	require.NoError(t, err)
	dir := t.TempDir()
	cf, kf := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	require.NoError(t, ca.Write(cf, kf))
	back, err := tlsconf.LoadCA(cf, kf)
	require.NoError(t, err)
	require.Equal(t, ca.Cert.SerialNumber, back.Cert.SerialNumber)
	_, _, err = back.Issue("n", []string{"127.0.0.1", "node-1.example"}, 48*time.Hour)
	require.NoError(t, err)
	certPEM, _, err := back.Issue("n", []string{"node-1.example"}, 48*time.Hour)
	require.NoError(t, err)
	require.True(t, strings.Contains(string(certPEM), "BEGIN CERTIFICATE"))
}

func TestAPIServerConfig(t *testing.T) {
	_, err := tlsconf.APIServerConfig(nil, nil)
	require.ErrorIs(t, err, tlsconf.ErrMaterial)
	pki := tlsconftest.NewPKI(t, "cluster")
	node := pki.Material(t, "node")
	cfg, err := tlsconf.APIServerConfig(node, nil)
	require.NoError(t, err)
	addr := echoServer(t, cfg)
	// An API client needs no certificate, only to trust the CA.
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: node.Pool(), ServerName: "127.0.0.1"})
	require.NoError(t, err)
	_, err = c.Write([]byte{1})
	require.NoError(t, err)
	_, err = io.ReadFull(c, make([]byte, 1))
	require.NoError(t, err)
	_ = c.Close()
}
