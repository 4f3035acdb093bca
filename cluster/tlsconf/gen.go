package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"
)

// CA is a certificate authority that issues node certificates.
type CA struct {
	// Cert is the CA certificate.
	Cert *x509.Certificate
	// Key is its private key.
	Key *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA (ECDSA P-256) named name, valid from a
// minute ago for validFor.
func NewCA(name string, validFor time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Foreman"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// LoadCA reads a CA certificate and its key (as written by [CA.Write]).
func LoadCA(certFile, keyFile string) (*CA, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot read the CA certificate %s: %w", ErrMaterial, certFile, err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: cannot read the CA key %s: %w", ErrMaterial, keyFile, err)
	}
	certs, err := parseCerts(certPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: the CA certificate %s: %w", ErrMaterial, certFile, err)
	}
	blk, _ := pem.Decode(keyPEM)
	if blk == nil {
		return nil, fmt.Errorf("%w: the CA key %s is not PEM", ErrMaterial, keyFile)
	}
	key, err := x509.ParseECPrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: the CA key %s: %w (give the EC key written by `foreman certs ca`)", ErrMaterial, keyFile, err)
	}
	if !key.PublicKey.Equal(certs[0].PublicKey) {
		return nil, fmt.Errorf("%w: the CA key %s does not go with the certificate %s", ErrMaterial, keyFile, certFile)
	}
	return &CA{Cert: certs[0], Key: key}, nil
}

// Issue makes a node certificate (ECDSA P-256) for both server and client
// use, named name, with hosts as SANs (IP addresses or DNS names), valid
// for validFor but never past the CA. It returns the PEM certificate and
// key.
func (ca *CA) Issue(name string, hosts []string, validFor time.Duration) (certPEM, keyPEM []byte, err error) {
	if len(hosts) == 0 {
		return nil, nil, errors.New("tlsconf: a node certificate needs at least one host name or address")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	notAfter := now.Add(validFor)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"Foreman"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// CertPEM returns the CA certificate in PEM.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// Write writes the CA's key and certificate (see [WritePair]).
func (ca *CA) Write(certFile, keyFile string) error {
	kder, err := x509.MarshalECPrivateKey(ca.Key)
	if err != nil {
		return err
	}
	return WritePair(certFile, keyFile, ca.CertPEM(), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

// WritePair writes a key (mode 0600) and then its certificate (0644). It
// never overwrites: when either file exists it writes nothing and says so.
// The key goes first so that a certificate on disk always has its key.
func WritePair(certFile, keyFile string, certPEM, keyPEM []byte) error {
	for _, f := range []string{keyFile, certFile} {
		if _, err := os.Lstat(f); err == nil {
			return fmt.Errorf("tlsconf: %s already exists; remove it or choose another name (nothing was written)", f)
		}
	}
	if err := writeNew(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	if err := writeNew(certFile, certPEM, 0o644); err != nil {
		_ = os.Remove(keyFile)
		return err
	}
	return nil
}

// writeNew creates path (failing if it exists) and writes b to it.
func writeNew(path string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("tlsconf: cannot create %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("tlsconf: cannot write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("tlsconf: cannot write %s: %w", path, err)
	}
	return nil
}

// serial returns a random 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(fmt.Sprintf("tlsconf: no randomness: %v", err))
	}
	return n.Add(n, big.NewInt(1))
}
