package main

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"time"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/tlsconf"
)

// benchTLS is the run's own PKI for -tls: a CA, one node certificate for
// 127.0.0.1 that every process uses, and an API token.
type benchTLS struct {
	files     tlsconf.Files
	m         *tlsconf.Material
	token     string
	tokenFile string
}

// newBenchTLS makes the CA, the node certificate and the token in dir.
func newBenchTLS(dir string) (*benchTLS, error) {
	ca, err := tlsconf.NewCA("clusterbench", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	f := tlsconf.Files{Cert: filepath.Join(dir, "node.crt"), Key: filepath.Join(dir, "node.key"), CA: filepath.Join(dir, "ca.crt")}
	if err := os.WriteFile(f.CA, ca.CertPEM(), 0o600); err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.Issue("node", []string{"127.0.0.1"}, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	if err := tlsconf.WritePair(f.Cert, f.Key, certPEM, keyPEM); err != nil {
		return nil, err
	}
	m, err := tlsconf.Load(f.Cert, f.Key, f.CA)
	if err != nil {
		return nil, err
	}
	b := &benchTLS{files: f, m: m, token: httpapi.NewToken(), tokenFile: filepath.Join(dir, "tokens")}
	return b, os.WriteFile(b.tokenFile, []byte(b.token+"\n"), 0o600)
}

// nodeArgs are the foreman flags of a node process (nil without -tls).
func (b *benchTLS) nodeArgs() []string {
	if b == nil {
		return nil
	}
	return []string{"--tls-cert", b.files.Cert, "--tls-key", b.files.Key, "--tls-ca", b.files.CA}
}

// frontendArgs add the token file to a frontend's flags.
func (b *benchTLS) frontendArgs() []string {
	if b == nil {
		return nil
	}
	return append(b.nodeArgs(), "--api-token-file", b.tokenFile)
}

// material is the client node's TLS material (nil without -tls).
func (b *benchTLS) material() *tlsconf.Material {
	if b == nil {
		return nil
	}
	return b.m
}

// apiTLS is the HTTP client's TLS config: trust the run's CA.
func (b *benchTLS) apiTLS() *tls.Config {
	return &tls.Config{RootCAs: b.m.Pool(), MinVersion: tls.VersionTLS12}
}
