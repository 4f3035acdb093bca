package etcdmembers

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// diagnoseTLS explains a failed first registration when TLS is the cause:
// with cfg, it makes a TLS handshake of its own with endpoint and reports
// what failed (etcd's client library only says the deadline passed);
// without cfg, it reports an etcd that answers in TLS only. It returns ""
// when it finds no TLS problem (or cannot connect at all).
func diagnoseTLS(endpoint string, cfg *tls.Config) string {
	const wait = 2 * time.Second
	raw, err := net.DialTimeout("tcp", endpoint, wait)
	if err != nil {
		return ""
	}
	defer func() { _ = raw.Close() }()
	_ = raw.SetDeadline(time.Now().Add(wait))
	if cfg == nil {
		// An etcd that wants TLS completes a TLS handshake.
		probe := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // a probe: only whether the server speaks TLS
		if probe.Handshake() == nil {
			return fmt.Sprintf("etcd at %s answers only over TLS, and this node connects in plain text (configure TLS for etcd)", endpoint)
		}
		return ""
	}
	c := cfg.Clone()
	if c.ServerName == "" {
		if host, _, err := net.SplitHostPort(endpoint); err == nil {
			c.ServerName = host
		}
	}
	conn := tls.Client(raw, c)
	if err := conn.Handshake(); err != nil {
		return fmt.Sprintf("the TLS handshake with %s failed: %v (check that etcd serves TLS there, that RootCAs holds the CA that signed its certificate, and that the certificate names %s)", endpoint, err, c.ServerName)
	}
	// With TLS 1.3, etcd refuses a client certificate after the handshake:
	// the refusal arrives on the first read, as late as etcd gets to check
	// the certificate. An etcd that accepts it sends nothing until spoken
	// to, so the read waits the whole deadline: wait, not less. It was
	// 500 ms, and an etcd on a loaded machine may refuse later than that:
	// the start error then lacked the reason (TestDiagnoseSlowRefusal).
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	var buf [1]byte
	if _, err := conn.Read(buf[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Sprintf("etcd at %s refused this node's TLS connection: %v (etcd requires a client certificate signed by a CA it trusts: check the client certificate)", endpoint, err)
	}
	return ""
}
