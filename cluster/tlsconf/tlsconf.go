package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// ErrMaterial reports TLS files that cannot be used: unreadable, not PEM,
// a key that does not match, a certificate not valid now or not signed by
// the CA. Errors of [Load] and [Material.Reload] wrap it.
var ErrMaterial = errors.New("tlsconf: unusable TLS material")

// Files names the three PEM files of a node's TLS material.
type Files struct {
	// Cert is the node's certificate, optionally followed by intermediates.
	Cert string
	// Key is the private key of Cert.
	Key string
	// CA holds the cluster CA certificate(s): every peer must chain to one
	// of them. Several certificates (a bundle) let a CA rotation overlap.
	CA string
}

// Material is a node's current TLS material. It is safe for concurrent use;
// the configurations it hands out read the current material at every
// handshake.
type Material struct {
	files Files
	now   func() time.Time
	cur   atomic.Pointer[state]
}

// state is one consistent set of loaded material; it is never modified
// after it is built, only replaced.
type state struct {
	cert tls.Certificate // with Leaf set
	pool *x509.CertPool
	cas  []*x509.Certificate
}

// Load reads and checks the node certificate, its key and the CA file. The
// error wraps [ErrMaterial], names the file at fault and says what to do.
func Load(cert, key, ca string) (*Material, error) {
	return load(Files{Cert: cert, Key: key, CA: ca}, time.Now)
}

func load(f Files, now func() time.Time) (*Material, error) {
	if f.Cert == "" || f.Key == "" || f.CA == "" {
		return nil, fmt.Errorf("%w: a certificate, its key and the CA file are all needed (got cert %q, key %q, CA %q)", ErrMaterial, f.Cert, f.Key, f.CA)
	}
	m := &Material{files: f, now: now}
	st, err := m.read()
	if err != nil {
		return nil, err
	}
	m.cur.Store(st)
	return m, nil
}

// Reload reads the files again and, when they are good, makes them the
// current material for every new handshake. When they are not, it returns
// the error and the old material stays in use.
func (m *Material) Reload() error {
	st, err := m.read()
	if err != nil {
		return err
	}
	m.cur.Store(st)
	return nil
}

// Files returns the files the material is read from.
func (m *Material) Files() Files { return m.files }

// Leaf returns the node's current certificate (for its serial and expiry).
func (m *Material) Leaf() *x509.Certificate { return m.cur.Load().cert.Leaf }

// Pool returns the current CA pool (a copy the caller may change).
func (m *Material) Pool() *x509.CertPool { return m.cur.Load().pool.Clone() }

func (m *Material) read() (*state, error) {
	f := m.files
	certPEM, err := os.ReadFile(f.Cert)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot read the certificate file %s: %w (give a PEM certificate, e.g. one made by `foreman certs node`)", ErrMaterial, f.Cert, err)
	}
	keyPEM, err := os.ReadFile(f.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot read the key file %s: %w (give the PEM private key of %s)", ErrMaterial, f.Key, err, f.Cert)
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot read the CA file %s: %w (give the cluster CA certificate, e.g. ca.crt from `foreman certs ca`)", ErrMaterial, f.CA, err)
	}
	chain, err := parseCerts(certPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: the certificate file %s: %w (give a PEM certificate, not a key or a DER file)", ErrMaterial, f.Cert, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: the key file %s does not go with the certificate %s: %w (give the key the certificate was issued for)", ErrMaterial, f.Key, f.Cert, err)
	}
	leaf := chain[0]
	cert.Leaf = leaf
	now := m.now()
	if now.Before(leaf.NotBefore) {
		return nil, fmt.Errorf("%w: the certificate %s is valid only from %s (check the clock, or issue a new one)", ErrMaterial, f.Cert, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	if now.After(leaf.NotAfter) {
		return nil, fmt.Errorf("%w: the certificate %s expired at %s (issue a new one with `foreman certs node`)", ErrMaterial, f.Cert, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if hasPrivateKey(caPEM) {
		return nil, fmt.Errorf("%w: the CA file %s holds a private key; give only the CA certificate and keep the CA key off the nodes", ErrMaterial, f.CA)
	}
	cas, err := parseCerts(caPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: the CA file %s: %w (give the PEM CA certificate)", ErrMaterial, f.CA, err)
	}
	pool := x509.NewCertPool()
	for _, c := range cas {
		pool.AddCert(c)
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}); err != nil {
		return nil, fmt.Errorf("%w: the certificate %s was not signed by the CA in %s: %w (issue it with this CA, or give the CA that issued it)", ErrMaterial, f.Cert, f.CA, err)
	}
	return &state{cert: cert, pool: pool, cas: cas}, nil
}

func parseCerts(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("a certificate does not parse: %w", err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block in it")
	}
	return out, nil
}

func hasPrivateKey(b []byte) bool {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return false
		}
		if strings.Contains(blk.Type, "PRIVATE KEY") {
			return true
		}
	}
}

// ServerConfig returns the configuration of a mutual-TLS server: it
// presents the current node certificate and requires a client certificate
// that chains to the current CA.
func (m *Material) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			st := m.cur.Load()
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{st.cert},
				ClientAuth:   tls.RequireAndVerifyClientCert,
				ClientCAs:    st.pool,
			}, nil
		},
	}
}

// ClientConfigFor returns the configuration of a mutual-TLS client dialling
// host: it presents the current node certificate, trusts only the current
// CA and checks host against the server certificate's SANs. Build one per
// connection so that each sees the current material.
func (m *Material) ClientConfigFor(host string) *tls.Config {
	st := m.cur.Load()
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		ServerName:   host,
		Certificates: []tls.Certificate{st.cert},
		RootCAs:      st.pool,
	}
}

// ClientConfig returns a client configuration for libraries that take one
// *tls.Config for all their connections and set the server name
// themselves (etcd's client, gRPC's credentials.NewTLS): the node
// certificate is read again at each handshake, the CA is the one current
// now.
func (m *Material) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		RootCAs:    m.cur.Load().pool,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c := m.cur.Load().cert
			return &c, nil
		},
	}
}

// DialTLSContext returns a dial function for http.Transport.DialTLSContext
// that dials with d (a zero Dialer when nil) and handshakes with
// [Material.ClientConfigFor] the dialled host.
func (m *Material) DialTLSContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if d == nil {
		d = &net.Dialer{}
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := tls.Client(raw, m.ClientConfigFor(host))
		if err := c.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, err
		}
		return c, nil
	}
}

// Transport returns an http.Transport for https:// URLs that speaks mutual
// TLS with the current material on every new connection and never uses a
// proxy.
func (m *Material) Transport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialTLSContext:      m.DialTLSContext(&net.Dialer{Timeout: 10 * time.Second}),
		ForceAttemptHTTP2:   false,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
}

// APIServerConfig returns the configuration of the HTTP API server. It
// presents public when not nil (a certificate the API's users trust, from
// --http-tls-cert/--http-tls-key), else the node certificate of node. API
// clients are authenticated by bearer tokens, so no client certificate is
// required; when node is not nil one that is sent must chain to its CA.
func APIServerConfig(node *Material, public *KeyPair) (*tls.Config, error) {
	if node == nil && public == nil {
		return nil, fmt.Errorf("%w: the API server needs the node's TLS material or a certificate of its own", ErrMaterial)
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cfg := &tls.Config{MinVersion: tls.VersionTLS12, ClientAuth: tls.NoClientCert}
			if node != nil {
				st := node.cur.Load()
				cfg.Certificates = []tls.Certificate{st.cert}
				cfg.ClientAuth, cfg.ClientCAs = tls.VerifyClientCertIfGiven, st.pool
			}
			if public != nil {
				cfg.Certificates = []tls.Certificate{*public.cur.Load()}
			}
			return cfg, nil
		},
	}, nil
}

// KeyPair is a reloadable certificate and key without a cluster CA: the
// HTTP API's public certificate, signed by whatever CA its users trust.
type KeyPair struct {
	cert, key string
	now       func() time.Time
	cur       atomic.Pointer[tls.Certificate]
}

// LoadKeyPair reads and checks a certificate and its key (the key matches,
// the certificate is valid now). The error wraps [ErrMaterial].
func LoadKeyPair(cert, key string) (*KeyPair, error) {
	if cert == "" || key == "" {
		return nil, fmt.Errorf("%w: a certificate and its key are both needed (got cert %q, key %q)", ErrMaterial, cert, key)
	}
	k := &KeyPair{cert: cert, key: key, now: time.Now}
	if err := k.Reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// Reload reads the files again; on error the old pair stays in use.
func (k *KeyPair) Reload() error {
	certPEM, err := os.ReadFile(k.cert)
	if err != nil {
		return fmt.Errorf("%w: cannot read the certificate file %s: %w", ErrMaterial, k.cert, err)
	}
	keyPEM, err := os.ReadFile(k.key)
	if err != nil {
		return fmt.Errorf("%w: cannot read the key file %s: %w", ErrMaterial, k.key, err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("%w: the key file %s does not go with the certificate %s: %w (give the key the certificate was issued for)", ErrMaterial, k.key, k.cert, err)
	}
	if now := k.now(); now.Before(c.Leaf.NotBefore) || now.After(c.Leaf.NotAfter) {
		return fmt.Errorf("%w: the certificate %s is valid only from %s to %s (issue a new one)", ErrMaterial, k.cert,
			c.Leaf.NotBefore.UTC().Format(time.RFC3339), c.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	k.cur.Store(&c)
	return nil
}

// Leaf returns the current certificate.
func (k *KeyPair) Leaf() *x509.Certificate { return k.cur.Load().Leaf }
