package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/cluster/tlsconf"
)

// expiryWarning is how long before a certificate expires the node warns.
const expiryWarning = 14 * 24 * time.Hour

// securityArgs are a node's TLS and token flags.
type securityArgs struct {
	tlsCert, tlsKey, tlsCA string
	httpCert, httpKey      string
	tokenFile              string
	etcdCA                 string
	insecure               bool
}

func (s *securityArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&s.tlsCert, "tls-cert", "", "node certificate (PEM) for mutual TLS between nodes, on the membership endpoint and the HTTP API; with --tls-key and --tls-ca")
	fs.StringVar(&s.tlsKey, "tls-key", "", "private key of --tls-cert")
	fs.StringVar(&s.tlsCA, "tls-ca", "", "cluster CA certificate(s): peers must present a certificate it signed")
	fs.StringVar(&s.httpCert, "http-tls-cert", "", "certificate of the HTTP API, when it needs a public one (default: --tls-cert)")
	fs.StringVar(&s.httpKey, "http-tls-key", "", "private key of --http-tls-cert")
	fs.StringVar(&s.tokenFile, "api-token-file", "", "file of bearer tokens the HTTP API and the --metrics listener accept, one per line (reloaded on SIGHUP)")
	fs.StringVar(&s.etcdCA, "etcd-ca", "", "CA certificate(s) that verify etcd's server certificate, when another CA than --tls-ca signed it (etcd membership with --tls-* only)")
	fs.BoolVar(&s.insecure, "insecure", false, "allow binding to an address other than loopback without TLS (gRPC, the HTTP API, --metrics; and the HTTP API without tokens, and etcd off loopback without TLS); logs what is exposed")
}

func (s securityArgs) nodeTLS() bool { return s.tlsCert != "" }
func (s securityArgs) httpTLS() bool { return s.nodeTLS() || s.httpCert != "" }

// httpAddr is the HTTP API address the node serves, "" for none.
func (a nodeArgs) httpAddr() string {
	switch {
	case a.role == node.RoleFrontend && a.http == "":
		return net.JoinHostPort(a.host, strconv.Itoa(a.port+5000))
	case a.role == node.RoleFrontend || a.role == node.RoleAll:
		return a.http
	}
	return ""
}

// checkSecurity checks the security flags against what the node binds and
// returns what it exposes without protection (for the --insecure WARN). A
// bind to an address that is not loopback without TLS (gRPC and the
// membership endpoint), an HTTP API there without TLS or without tokens,
// metrics (--metrics) there without TLS, or an etcd that is not on
// loopback without TLS (checkEtcd), is a usage error unless --insecure is
// given.
func checkSecurity(a nodeArgs) (exposed []string, err error) {
	s := a.sec
	if n := countSet(s.tlsCert, s.tlsKey, s.tlsCA); n != 0 && n != 3 {
		return nil, fmt.Errorf("%w: --tls-cert, --tls-key and --tls-ca go together (give all three)", errUsage)
	}
	if n := countSet(s.httpCert, s.httpKey); n == 1 {
		return nil, fmt.Errorf("%w: --http-tls-cert and --http-tls-key go together", errUsage)
	}
	etcd, err := checkEtcd(a)
	if err != nil {
		return nil, err
	}
	http := a.httpAddr()
	if http == "" && a.metrics == "" && (s.httpCert != "" || s.tokenFile != "") {
		return nil, fmt.Errorf("%w: --http-tls-cert and --api-token-file are for a node that serves the HTTP API (a frontend, or all-in-one with --http) or metrics (--metrics)", errUsage)
	}
	if a.role != node.RoleAll && !s.nodeTLS() && !isLoopback(a.host) {
		exposed = append(exposed, fmt.Sprintf("gRPC and membership on %s without TLS (anyone who reaches it can join the cluster)", a.host))
	}
	if http != "" {
		host, _, err := net.SplitHostPort(http)
		if err != nil {
			return nil, fmt.Errorf("%w: --http %q is not host:port", errUsage, http)
		}
		if !isLoopback(host) {
			if !s.httpTLS() {
				exposed = append(exposed, fmt.Sprintf("the HTTP API on %s without TLS", http))
			}
			if s.tokenFile == "" {
				exposed = append(exposed, fmt.Sprintf("the HTTP API on %s without tokens (anyone who reaches it can submit and read work)", http))
			}
		}
	}
	if a.metrics != "" {
		// The metrics listener is secured as the API is (metricsOptions):
		// HTTPS with the node's or the API's certificate, the API's
		// tokens when the node has them. Without TLS it is exposed.
		if addr, err := metrics.ListenAddr(a.metrics); err == nil && !s.httpTLS() {
			if host, _, _ := net.SplitHostPort(addr); !isLoopback(host) {
				exposed = append(exposed, fmt.Sprintf("metrics (--metrics) on %s without TLS (anyone who reaches it can read the cluster's figures)", addr))
			}
		}
	}
	if addr, err := pprofAddr(a); err == nil && addr != "" {
		if host, _, _ := net.SplitHostPort(addr); !isLoopback(host) {
			exposed = append(exposed, fmt.Sprintf("runtime profiles (--pprof) on %s (anyone who reaches it can read the program's memory and stacks)", addr))
		}
	}
	if etcd != "" {
		exposed = append(exposed, etcd)
	}
	if len(exposed) > 0 && !s.insecure {
		return nil, fmt.Errorf("%w: refusing to expose %s; give --tls-cert/--tls-key/--tls-ca (and --api-token-file for the HTTP API and metrics), bind to 127.0.0.1, or pass --insecure to accept the risk", errUsage, strings.Join(exposed, "; "))
	}
	return exposed, nil
}

func countSet(vals ...string) int {
	n := 0
	for _, v := range vals {
		if v != "" {
			n++
		}
	}
	return n
}

// isLoopback reports whether host is a loopback name or address; a
// wildcard ("", 0.0.0.0, ::) binds every interface and is not.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// security is a node's loaded TLS material and tokens.
type security struct {
	args   securityArgs
	node   *tlsconf.Material
	public *tlsconf.KeyPair
	tokens *httpapi.Tokens
	etcdCA *x509.CertPool // --etcd-ca; read once, at start
}

// loadSecurity loads the files the flags name and logs what it loaded.
func loadSecurity(s securityArgs, log *slog.Logger) (*security, error) {
	sec := &security{args: s}
	var err error
	if s.nodeTLS() {
		if sec.node, err = tlsconf.Load(s.tlsCert, s.tlsKey, s.tlsCA); err != nil {
			return nil, err
		}
		logCert(log, "node certificate", s.tlsCert, sec.node.Leaf())
		warnReadable(log, s.tlsKey)
	}
	if s.httpCert != "" {
		if sec.public, err = tlsconf.LoadKeyPair(s.httpCert, s.httpKey); err != nil {
			return nil, err
		}
		logCert(log, "HTTP API certificate", s.httpCert, sec.public.Leaf())
		warnReadable(log, s.httpKey)
	}
	if s.etcdCA != "" {
		if sec.etcdCA, err = loadEtcdCA(s.etcdCA); err != nil {
			return nil, err
		}
		log.Info("etcd CA loaded", "file", s.etcdCA)
	}
	if s.tokenFile != "" {
		if sec.tokens, err = httpapi.LoadTokens(s.tokenFile); err != nil {
			return nil, err
		}
		log.Info("API tokens loaded", "file", s.tokenFile, "tokens", sec.tokens.Len())
		warnReadable(log, s.tokenFile)
	}
	return sec, nil
}

func logCert(log *slog.Logger, what, file string, c *x509.Certificate) {
	left := time.Until(c.NotAfter)
	attrs := []any{"file", file, "serial", c.SerialNumber.Text(16), "expires", c.NotAfter.UTC().Format(time.RFC3339)}
	if left < expiryWarning {
		log.Warn(what+" expires soon; issue a new one and send SIGHUP", append(attrs, "left", left.Round(time.Hour).String())...)
		return
	}
	log.Info(what+" loaded", attrs...)
}

// warnReadable warns about a secret file that others than its owner may
// read.
func warnReadable(log *slog.Logger, file string) {
	st, err := os.Stat(file)
	if err == nil && st.Mode().Perm()&0o077 != 0 {
		log.Warn("a secret file is readable by others; chmod 600 it", "file", file, "mode", st.Mode().Perm().String())
	}
}

// httpOptions are the HTTP API server's TLS and token options.
func (sec *security) httpOptions() ([]httpapi.Option, error) {
	if sec == nil {
		return nil, nil
	}
	var opts []httpapi.Option
	if sec.node != nil || sec.public != nil {
		cfg, err := tlsconf.APIServerConfig(sec.node, sec.public)
		if err != nil {
			return nil, err
		}
		opts = append(opts, httpapi.WithTLS(cfg))
	}
	if sec.tokens != nil {
		opts = append(opts, httpapi.WithTokens(sec.tokens))
	}
	return opts, nil
}

// metricsOptions secure the --metrics listener as the HTTP API is: HTTPS
// with the same certificate, and the same tokens when the node has them.
func (sec *security) metricsOptions() ([]metrics.ServeOption, error) {
	if sec == nil {
		return nil, nil
	}
	var opts []metrics.ServeOption
	if sec.node != nil || sec.public != nil {
		cfg, err := tlsconf.APIServerConfig(sec.node, sec.public)
		if err != nil {
			return nil, err
		}
		opts = append(opts, metrics.WithTLS(cfg))
	}
	if sec.tokens != nil {
		opts = append(opts, metrics.WithBearer(sec.tokens.Valid))
	}
	return opts, nil
}

// reload reads every file again; a file that fails keeps its old content.
func (sec *security) reload(log *slog.Logger) error {
	var errs []error
	if sec.node != nil {
		if err := sec.node.Reload(); err != nil {
			log.Error("cannot reload the node certificate; keeping the old one", "error", err)
			errs = append(errs, err)
		} else {
			c := sec.node.Leaf()
			log.Info("node certificate reloaded", "serial", c.SerialNumber.Text(16), "expires", c.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	if sec.public != nil {
		if err := sec.public.Reload(); err != nil {
			log.Error("cannot reload the HTTP API certificate; keeping the old one", "error", err)
			errs = append(errs, err)
		} else {
			c := sec.public.Leaf()
			log.Info("HTTP API certificate reloaded", "serial", c.SerialNumber.Text(16), "expires", c.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	if sec.tokens != nil {
		if err := sec.tokens.Reload(); err != nil {
			log.Error("cannot reload the API tokens; keeping the old ones", "error", err)
			errs = append(errs, err)
		} else {
			log.Info("API tokens reloaded", "tokens", sec.tokens.Len())
		}
	}
	return errors.Join(errs...)
}

// reloadOnSIGHUP reloads certificates and tokens on every SIGHUP until ctx
// ends.
func (sec *security) reloadOnSIGHUP(ctx context.Context, log *slog.Logger) {
	if sec.node == nil && sec.public == nil && sec.tokens == nil {
		return
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				_ = sec.reload(log) // reload logged each outcome
			}
		}
	}()
}

// startSecurity checks the flags, loads the files, logs the --insecure WARN
// once and starts the SIGHUP reloads. exit is the process's exit code when
// it fails (2 for flags, 1 for files).
func startSecurity(ctx context.Context, a nodeArgs, log *slog.Logger) (sec *security, exit int, err error) {
	exposed, err := checkSecurity(a)
	if err != nil {
		return nil, 2, err
	}
	if len(exposed) > 0 {
		log.Warn("--insecure: exposed without protection", "exposed", strings.Join(exposed, "; "))
	}
	sec, err = loadSecurity(a.sec, log)
	if err != nil {
		return nil, 1, err
	}
	sec.reloadOnSIGHUP(ctx, log)
	return sec, 0, nil
}

// material is the node's TLS material, nil when the node runs plain.
func (sec *security) material() *tlsconf.Material {
	if sec == nil {
		return nil
	}
	return sec.node
}
