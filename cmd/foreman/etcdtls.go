package main

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"

	"github.com/foreman-actors/foreman/cluster/node"
)

// checkEtcd checks --etcd-ca and the etcd endpoints against the node's TLS
// flags, and returns what etcd membership exposes without protection ("":
// nothing). The node talks to etcd over TLS exactly when it has --tls-*: a
// plain client to an etcd that is not on loopback lets anyone on the path
// read the members and forge them, the same risk as a plain bind, so it
// joins the --insecure list.
func checkEtcd(a nodeArgs) (exposed string, err error) {
	s := a.sec
	m, err := node.ParseMembership(a.membership)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errUsage, err)
	}
	if s.etcdCA != "" {
		if !m.IsEtcd() {
			return "", fmt.Errorf("%w: --etcd-ca is for etcd membership (--membership etcd://...); with %s it has nothing to verify", errUsage, m)
		}
		if !s.nodeTLS() {
			return "", fmt.Errorf("%w: --etcd-ca needs --tls-cert/--tls-key/--tls-ca: the node connects to etcd over TLS only with its own certificate", errUsage)
		}
	}
	if !m.IsEtcd() || s.nodeTLS() {
		return "", nil
	}
	for _, ep := range m.Etcd {
		// ParseMembership left every endpoint host:port.
		if host, _, _ := net.SplitHostPort(ep); !isLoopback(host) {
			return fmt.Sprintf("membership through etcd at %s without TLS (anyone on the path can read and forge the members)", m), nil
		}
	}
	return "", nil
}

// loadEtcdCA reads the CA certificates of --etcd-ca.
func loadEtcdCA(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--etcd-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--etcd-ca %s: no PEM certificate in the file (give the CA certificate that signed etcd's server certificate)", file)
	}
	return pool, nil
}

// membershipOptions are the options of node.NewMembership the security
// flags give: the etcd CA of --etcd-ca.
func (sec *security) membershipOptions() []node.MembershipOption {
	if sec == nil || sec.etcdCA == nil {
		return nil
	}
	return []node.MembershipOption{node.WithEtcdCA(sec.etcdCA)}
}
