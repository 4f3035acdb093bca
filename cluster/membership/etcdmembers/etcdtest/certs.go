package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Certs are a test CA and the certificates it signed, as PEM files in a
// temporary directory: a server certificate for etcd (valid for 127.0.0.1,
// localhost and the hosts given to [NewCerts]) and a client certificate.
type Certs struct {
	Dir string
	// CAFile is the CA etcd trusts for client certificates (from
	// [NewCerts], also the one that signed the server certificate).
	CAFile                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	pool                  *x509.CertPool
	clientPair            tls.Certificate
}

// NewCerts makes a CA, a server and a client certificate with crypto/x509.
func NewCerts(t testing.TB, hosts ...string) *Certs {
	t.Helper()
	dir := t.TempDir()
	c := &Certs{Dir: dir}
	caKey, caCert, caDER := newCA(t, "etcdtest CA")
	c.CAFile = writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)
	c.pool = x509.NewCertPool()
	c.pool.AddCert(caCert)
	var ips []net.IP
	dns := []string{"localhost"}
	for _, h := range append([]string{"127.0.0.1"}, hosts...) {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	c.ServerCert, c.ServerKey, _ = issue(t, dir, "server", caCert, caKey, ips, dns,
		[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
	c.ClientCert, c.ClientKey, c.clientPair = issue(t, dir, "client", caCert, caKey, nil, nil,
		[]x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	return c
}

// ClientTLS returns a client configuration that trusts the CA and presents
// the client certificate.
func (c *Certs) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: c.pool, Certificates: []tls.Certificate{c.clientPair}, MinVersion: tls.VersionTLS12}
}

func newCA(t testing.TB, name string) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("etcdtest: CA key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("etcdtest: CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("etcdtest: CA certificate: %v", err)
	}
	return key, cert, der
}

// OtherCA returns a pool with a CA that signed none of the certificates:
// a client that trusts only it rejects the server.
func OtherCA(t testing.TB) *x509.CertPool {
	t.Helper()
	_, cert, _ := newCA(t, "etcdtest other CA")
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

func issue(t testing.TB, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, ips []net.IP, dns []string, usage []x509.ExtKeyUsage) (certFile, keyFile string, pair tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("etcdtest: %s key: %v", name, err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "etcdtest " + name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		IPAddresses:  ips,
		DNSNames:     dns,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatalf("etcdtest: %s certificate: %v", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatalf("etcdtest: %s key: %v", name, err)
	}
	certFile = writePEM(t, dir, name+".pem", "CERTIFICATE", der)
	keyFile = writePEM(t, dir, name+"-key.pem", "EC PRIVATE KEY", keyDER)
	pair, err = tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatalf("etcdtest: %s key pair: %v", name, err)
	}
	return certFile, keyFile, pair
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("etcdtest: write %s: %v", path, err)
	}
	return path
}

// Files names certificates made elsewhere (e.g. by `foreman certs`) for
// [FileCerts].
type Files struct {
	// CA is the CA etcd trusts for client certificates (--trusted-ca-file).
	CA string
	// Cert and Key are etcd's server certificate; it must name 127.0.0.1
	// (or the host given to [WithHost]).
	Cert, Key string
	// ServerCA is the CA that signed Cert, which the readiness probe
	// verifies etcd with; empty means CA.
	ServerCA string
	// ClientCert and ClientKey are the readiness probe's client
	// certificate, signed by CA.
	ClientCert, ClientKey string
}

// FileCerts returns [Certs] for [WithTLS] from files made elsewhere, so
// that etcd's server certificate can come from another CA than the one it
// trusts for clients.
func FileCerts(t testing.TB, f Files) *Certs {
	t.Helper()
	if f.ServerCA == "" {
		f.ServerCA = f.CA
	}
	b, err := os.ReadFile(f.ServerCA)
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("etcdtest: no PEM certificate in %s", f.ServerCA)
	}
	pair, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		t.Fatalf("etcdtest: client key pair: %v", err)
	}
	return &Certs{
		Dir: filepath.Dir(f.Cert), CAFile: f.CA, ServerCert: f.Cert, ServerKey: f.Key,
		ClientCert: f.ClientCert, ClientKey: f.ClientKey, pool: pool, clientPair: pair,
	}
}
