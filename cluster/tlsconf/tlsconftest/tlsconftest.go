// Package tlsconftest makes a throwaway CA and node certificates in a
// test's temporary directory, so tests of mutual TLS commit no key.
package tlsconftest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/foreman-actors/foreman/cluster/tlsconf"
)

// PKI is a test CA whose files live in a temporary directory.
type PKI struct {
	*tlsconf.CA
	// Dir holds the files; CAFile is the CA certificate in it.
	Dir, CAFile string
}

// NewPKI makes a CA named name valid for a day and writes its certificate.
func NewPKI(t testing.TB, name string) *PKI {
	t.Helper()
	ca, err := tlsconf.NewCA(name, 24*time.Hour)
	if err != nil {
		t.Fatalf("tlsconftest: new CA: %v", err)
	}
	dir := t.TempDir()
	p := &PKI{CA: ca, Dir: dir, CAFile: filepath.Join(dir, name+"-ca.crt")}
	if err := os.WriteFile(p.CAFile, ca.CertPEM(), 0o600); err != nil {
		t.Fatalf("tlsconftest: %v", err)
	}
	return p
}

// Files issues a node certificate named name for hosts (127.0.0.1 when
// none) and returns its files, with this PKI's CA file.
func (p *PKI) Files(t testing.TB, name string, hosts ...string) tlsconf.Files {
	t.Helper()
	if len(hosts) == 0 {
		hosts = []string{"127.0.0.1"}
	}
	certPEM, keyPEM, err := p.Issue(name, hosts, time.Hour)
	if err != nil {
		t.Fatalf("tlsconftest: issue %s: %v", name, err)
	}
	f := tlsconf.Files{Cert: filepath.Join(p.Dir, name+".crt"), Key: filepath.Join(p.Dir, name+".key"), CA: p.CAFile}
	_ = os.Remove(f.Cert)
	_ = os.Remove(f.Key)
	if err := tlsconf.WritePair(f.Cert, f.Key, certPEM, keyPEM); err != nil {
		t.Fatalf("tlsconftest: %v", err)
	}
	return f
}

// Material issues a node certificate and loads it.
func (p *PKI) Material(t testing.TB, name string, hosts ...string) *tlsconf.Material {
	t.Helper()
	f := p.Files(t, name, hosts...)
	m, err := tlsconf.Load(f.Cert, f.Key, f.CA)
	if err != nil {
		t.Fatalf("tlsconftest: load %s: %v", name, err)
	}
	return m
}
