package etcdmembers

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/tlsconf/tlsconftest"
)

// TestDiagnoseSlowRefusal: a server that refuses the client certificate
// only after a while (a loaded etcd verifies it late; with TLS 1.3 the
// refusal comes after the client's handshake) is still diagnosed as
// refusing it.
func TestDiagnoseSlowRefusal(t *testing.T) {
	t.Parallel()
	srvPKI, strangers := tlsconftest.NewPKI(t, "etcd-ca"), tlsconftest.NewPKI(t, "stranger-ca")
	srv := srvPKI.Material(t, "etcd", "127.0.0.1")
	const verifyTakes = time.Second
	scfg := srv.ServerConfig()
	get := scfg.GetConfigForClient
	scfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		c, err := get(hello)
		if err != nil {
			return nil, err
		}
		// TLS 1.3, as etcd negotiates with Go clients; the certificate
		// checked late and refused, as a loaded etcd does.
		c.MinVersion = tls.VersionTLS13
		c.ClientAuth = tls.RequireAnyClientCert
		c.VerifyPeerCertificate = func([][]byte, [][]*x509.Certificate) error {
			time.Sleep(verifyTakes)
			return errors.New("certificate signed by a CA this server does not trust")
		}
		return c, nil
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", scfg)
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() {
		require.NoError(t, l.Close())
		<-done
	})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			_ = c.(*tls.Conn).Handshake() // refuses the stranger's certificate
			_ = c.Close()
		}
	}()

	ccfg := strangers.Material(t, "worker", "127.0.0.1").ClientConfig()
	ccfg.RootCAs = srv.Pool() // trusts etcd; etcd does not trust it
	diag := diagnoseTLS(l.Addr().String(), ccfg)
	require.Contains(t, diag, "refused this node's TLS connection")
}
