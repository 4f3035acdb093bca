// Package etcdtest starts a real etcd server for a test: the etcd binary
// on free loopback ports, its data in t.TempDir, killed by PID when the
// test ends. Without an etcd binary on PATH a test skips, loudly; with
// FOREMAN_TEST_ETCD=require (set by CI) it fails instead.
package etcdtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// RequireEnv is the environment variable that turns a missing etcd into a
// test failure when set to "require".
const RequireEnv = "FOREMAN_TEST_ETCD"

// Server is an etcd server run for one test.
type Server struct {
	t       testing.TB
	bin     string
	host    string
	prefix  []string // command prefix, e.g. ip netns exec NS
	client  int
	peer    int
	dataDir string
	logPath string
	certs   *Certs // nil: plain HTTP

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Option configures [Start].
type Option func(*Server)

// WithHost makes etcd listen on host (default 127.0.0.1).
func WithHost(host string) Option { return func(s *Server) { s.host = host } }

// WithCommandPrefix runs etcd under a command prefix, e.g.
// []string{"ip", "netns", "exec", "ns4"} to run it in a network namespace.
func WithCommandPrefix(prefix ...string) Option {
	return func(s *Server) { s.prefix = prefix }
}

// WithTLS makes etcd serve its clients over TLS only, with the server
// certificate of certs, and require a client certificate signed by its CA.
func WithTLS(certs *Certs) Option { return func(s *Server) { s.certs = certs } }

// Binary returns the etcd binary's path, or skips t (fails it under
// FOREMAN_TEST_ETCD=require) when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv(RequireEnv) == "require" {
			t.Fatalf("etcd is required (%s=require) but not on PATH: %v (Debian: apt-get install etcd-server)", RequireEnv, err)
		}
		t.Skipf("SKIPPED: no etcd binary on PATH (%v); install etcd-server to run the etcd tests", err)
	}
	return bin
}

// Start starts etcd and waits until it answers; it is killed when t ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{t: t, bin: Binary(t), host: "127.0.0.1"}
	for _, o := range opts {
		o(s)
	}
	s.client, s.peer = FreePort(t), FreePort(t)
	if s.host != "127.0.0.1" {
		// A port free on loopback is very likely free on the host's address.
		s.client, s.peer = FreePort(t), FreePort(t)
	}
	dir := t.TempDir()
	s.dataDir, s.logPath = filepath.Join(dir, "data"), filepath.Join(dir, "etcd.log")
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			if b, err := os.ReadFile(s.logPath); err == nil {
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				if len(lines) > 20 {
					lines = lines[len(lines)-20:]
				}
				t.Logf("etcd log (last lines):\n%s", strings.Join(lines, "\n"))
			}
		}
	})
	s.Restart()
	return s
}

// FreePort returns a TCP port free on loopback now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: no free port: %v", err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}

// Endpoint returns the client address host:port.
func (s *Server) Endpoint() string { return net.JoinHostPort(s.host, strconv.Itoa(s.client)) }

// URL returns the membership URL etcd://host:port.
func (s *Server) URL() string { return "etcd://" + s.Endpoint() }

// Kill kills etcd (SIGKILL, by PID) and waits for it; a no-op when it is
// not running.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// Wipe kills etcd and deletes its data: the next Restart starts an empty
// etcd on the same ports (as if it lost its disk).
func (s *Server) Wipe() {
	s.Kill()
	if err := os.RemoveAll(s.dataDir); err != nil {
		s.t.Fatalf("etcdtest: wipe %s: %v", s.dataDir, err)
	}
}

// Restart starts etcd again with its data (after Kill or Wipe) and waits
// until it answers.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	scheme := "http://"
	if s.certs != nil {
		scheme = "https://"
	}
	clientURL := scheme + s.Endpoint()
	peerURL := "http://" + net.JoinHostPort(s.host, strconv.Itoa(s.peer))
	args := []string{
		"--name", "t",
		"--data-dir", s.dataDir,
		"--listen-client-urls", clientURL,
		"--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL,
		"--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "t=" + peerURL,
		// A single member on a loaded test machine: short ticks make
		// etcd's minimum lease 1 s (1.5 election timeouts, rounded up),
		// so lease tests run fast.
		"--heartbeat-interval", "10",
		"--election-timeout", "100",
		"--logger", "zap",
		"--log-outputs", s.logPath,
	}
	if s.certs != nil {
		args = append(args, "--cert-file", s.certs.ServerCert, "--key-file", s.certs.ServerKey,
			"--trusted-ca-file", s.certs.CAFile, "--client-cert-auth")
	}
	argv := append(append(append([]string(nil), s.prefix...), s.bin), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("etcdtest: start %v: %v", argv, err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	if err := s.waitReady(30 * time.Second); err != nil {
		s.t.Fatalf("etcdtest: etcd at %s did not answer: %v (log: %s)", s.Endpoint(), err, s.logPath)
	}
}

func (s *Server) waitReady(d time.Duration) error {
	cfg := clientv3.Config{Endpoints: []string{s.Endpoint()}, DialTimeout: time.Second, Logger: zap.NewNop()}
	if s.certs != nil {
		cfg.TLS = s.certs.ClientTLS()
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "/etcdtest-ready")
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v: %w", d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
