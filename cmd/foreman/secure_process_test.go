package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/tlsconf"
)

// runForeman runs the binary to completion and returns its output.
func runForeman(ctx context.Context, t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
	return string(out), err
}

// tlsArgs are the --tls-* flags of the node certificate name in dir.
func tlsArgs(dir, name string) []string {
	return []string{"--tls-cert", filepath.Join(dir, name+".crt"), "--tls-key", filepath.Join(dir, name+".key"), "--tls-ca", filepath.Join(dir, "ca.crt")}
}

// certSerial reads the serial of a PEM certificate file.
func certSerial(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	blk, _ := pem.Decode(b)
	require.NotNil(t, blk)
	c, err := x509.ParseCertificate(blk.Bytes)
	require.NoError(t, err)
	return c.SerialNumber.String()
}

// peerSerial opens a new mutual-TLS connection to addr with m and returns
// the serial of the certificate the server presented.
func peerSerial(t *testing.T, m *tlsconf.Material, addr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := m.DialTLSContext(nil)(ctx, "tcp", addr)
	require.NoError(t, err, "a TLS connection to %s", addr)
	defer func() { _ = c.Close() }()
	return c.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestSecureClusterProcesses runs real processes with mutual TLS and
// tokens, with certificates and tokens made by `foreman certs`: jobs run
// over HTTPS and through `foreman submit`; a frontend and a worker with
// another CA's certificates and a frontend without TLS never get work
// acknowledged and never become members; a certificate rotated on SIGHUP
// is what new connections see; no process logs the token.
func TestSecureClusterProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real cluster processes; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	pki, rogue, data := t.TempDir(), t.TempDir(), t.TempDir()
	for _, args := range [][]string{
		{"certs", "ca", "--dir", pki},
		{"certs", "node", "--dir", pki, "--name", "backend", "--hosts", "127.0.0.1,localhost"},
		{"certs", "node", "--dir", pki, "--name", "frontend", "--hosts", "127.0.0.1"},
		{"certs", "node", "--dir", pki, "--name", "worker", "--hosts", "127.0.0.1"},
		{"certs", "token", "--append", filepath.Join(pki, "tokens")},
		{"certs", "ca", "--dir", rogue},
		{"certs", "node", "--dir", rogue, "--name", "stranger", "--hosts", "127.0.0.1"},
		{"certs", "node", "--dir", rogue, "--name", "stranger-worker", "--hosts", "127.0.0.1"},
	} {
		out, err := runForeman(ctx, t, args...)
		require.NoError(t, err, "foreman %v: %s", args, out)
	}
	// The CA key stays where it was made; the same command refuses to overwrite.
	out, err := runForeman(ctx, t, "certs", "ca", "--dir", pki)
	require.Error(t, err)
	require.Contains(t, out, "already exists")
	tokenFile := filepath.Join(pki, "tokens")
	tokenBytes, err := os.ReadFile(tokenFile)
	require.NoError(t, err)
	token := strings.TrimSpace(string(tokenBytes))

	ports := pickWalkPorts(t)
	seeds := "--seeds=127.0.0.1:" + strconv.Itoa(ports.backend1)
	g := newProcGroup(t)
	g.grace = 10 * time.Second
	step := func(format string, args ...any) { t.Logf("%s "+format, append([]any{g.since()}, args...)...) }

	backend := g.start(ctx, "backend", append([]string{strconv.Itoa(ports.backend1), seeds, "--data", data}, tlsArgs(pki, "backend")...)...)
	backend.waitLine(t, "node started", 1, 60*time.Second, "tls=true")
	front := g.start(ctx, "frontend", append([]string{strconv.Itoa(ports.frontend), seeds, "--produce=false", "--api-token-file", tokenFile}, tlsArgs(pki, "frontend")...)...)
	g.start(ctx, "worker", append([]string{"0", seeds, "--workers", "2", "--delay", "0"}, tlsArgs(pki, "worker")...)...)
	front.waitLine(t, "http api listening", 1, 60*time.Second, "tls=true", "tokens=true")
	step("backend, frontend and worker started with mutual TLS")

	// 1. A job over HTTPS with the token (the Go client).
	caPEM, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	apiAddr := "127.0.0.1:" + strconv.Itoa(ports.frontend+5000)
	client, err := httpapi.NewClient("https://"+apiAddr, httpapi.WithTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}), httpapi.WithToken(token))
	require.NoError(t, err)
	id, err := client.Submit(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("12")})
	require.NoError(t, err)
	info, err := client.Wait(ctx, id, 100*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, httpapi.StatusDone, info.Status)
	require.JSONEq(t, "144", string(info.Result))
	step("job %s done over HTTPS", id)

	// 2. Through `foreman submit` and `foreman status`.
	out, err = runForeman(ctx, t, "submit", "--to", apiAddr, "--cacert", filepath.Join(pki, "ca.crt"), "--token-file", tokenFile, "--type", "square", "--payload", "7", "--wait")
	require.NoError(t, err, out)
	require.Contains(t, out, "done: 49")
	submitOut := strings.TrimSpace(out)
	out, err = runForeman(ctx, t, "status", "--to", apiAddr, "--cacert", filepath.Join(pki, "ca.crt"))
	require.Error(t, err, "status without a token")
	require.Contains(t, out, "401")
	out, err = runForeman(ctx, t, "status", "--to", "http://"+apiAddr, "--token-file", tokenFile)
	require.Error(t, err, "plain HTTP to the HTTPS API")
	require.Contains(t, out, "400", "plain HTTP to the HTTPS API")
	step("foreman submit over HTTPS with the token: %s", submitOut)

	// 3. Strangers: another CA's frontend and worker, and a frontend without TLS.
	// (Below the walk's frontend port: it may be 3998, and 4000 would be a worker.)
	strangerFront := g.start(ctx, "stranger-frontend", append([]string{strconv.Itoa(ports.frontend - 1), seeds, "--produce=false", "--http", "127.0.0.1:0", "--api-token-file", tokenFile}, tlsArgs(rogue, "stranger")...)...)
	strangerWorker := g.start(ctx, "stranger-worker", append([]string{"0", seeds, "--workers", "2", "--delay", "0"}, tlsArgs(rogue, "stranger-worker")...)...)
	plainFront := g.start(ctx, "plain-frontend", strconv.Itoa(ports.frontend-2), seeds, "--produce=false", "--http", "127.0.0.1:0")
	for _, p := range []*nodeProc{strangerFront, plainFront} {
		p.waitLine(t, "http api listening", 1, 60*time.Second)
	}
	strangerWorker.waitLine(t, "node started", 1, 60*time.Second)
	for _, sc := range []struct {
		p      *nodeProc
		scheme string
		opts   []httpapi.ClientOption
	}{
		{strangerFront, "https", []httpapi.ClientOption{httpapi.WithTLSConfig(rogueTrust(t, rogue)), httpapi.WithToken(token)}},
		{plainFront, "http", nil},
	} {
		addr := listenAddr(t, sc.p)
		c, err := httpapi.NewClient(sc.scheme+"://"+addr, sc.opts...)
		require.NoError(t, err)
		sctx, scancel := context.WithTimeout(ctx, 4*time.Second)
		wid := "stranger-" + sc.p.name
		_, err = c.Submit(sctx, httpapi.SubmitRequest{ID: wid, Type: "square", Payload: json.RawMessage("3")})
		scancel()
		require.Error(t, err, "%s had work acknowledged", sc.p.name)
		_, err = client.Work(ctx, wid)
		require.ErrorIs(t, err, httpapi.ErrNotFound, "the master heard of %s's work", sc.p.name)
	}
	st, err := client.Status(ctx)
	require.NoError(t, err)
	var addrs []string
	for _, m := range st.Members {
		addrs = append(addrs, m.Address)
	}
	for _, p := range []int{ports.frontend - 1, ports.frontend - 2} {
		require.NotContains(t, strings.Join(addrs, " "), ":"+strconv.Itoa(p), "a stranger is a member")
	}
	require.Equal(t, int64(2), st.Workers.Idle+st.Workers.Busy, "the master knows workers other than the 2 real ones: %+v", st.Workers)
	step("strangers kept out: members %v, workers %+v", addrs, st.Workers)

	// 4. Rotation: a new backend certificate, SIGHUP, new connections see it.
	worker, err := tlsconf.Load(filepath.Join(pki, "worker.crt"), filepath.Join(pki, "worker.key"), filepath.Join(pki, "ca.crt"))
	require.NoError(t, err)
	grpcAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.backend1))
	memAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.backend1+4000))
	oldSerial := certSerial(t, filepath.Join(pki, "backend.crt"))
	require.Equal(t, oldSerial, peerSerial(t, worker, grpcAddr))
	require.NoError(t, os.Remove(filepath.Join(pki, "backend.crt")))
	require.NoError(t, os.Remove(filepath.Join(pki, "backend.key")))
	out, err = runForeman(ctx, t, "certs", "node", "--dir", pki, "--name", "backend", "--hosts", "127.0.0.1")
	require.NoError(t, err, out)
	newSerial := certSerial(t, filepath.Join(pki, "backend.crt"))
	require.NoError(t, backend.cmd.Process.Signal(syscall.SIGHUP))
	backend.waitLine(t, "node certificate reloaded", 1, 30*time.Second)
	require.Equal(t, newSerial, peerSerial(t, worker, grpcAddr), "the gRPC port still presents the old certificate")
	require.Equal(t, newSerial, peerSerial(t, worker, memAddr), "the membership port still presents the old certificate")
	// The cluster keeps working across the rotation.
	id, err = client.Submit(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("5")})
	require.NoError(t, err)
	info, err = client.Wait(ctx, id, 100*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, httpapi.StatusDone, info.Status)
	step("backend certificate rotated on SIGHUP: serial %s -> %s; a job ran after", oldSerial, newSerial)

	// 5. A token file reloaded on SIGHUP: the old token is revoked, and its
	// result stream open across the reload ends with it (issue 34 item 9).
	out, err = runForeman(ctx, t, "certs", "token")
	require.NoError(t, err)
	newToken := strings.TrimSpace(out)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer hc.CloseIdleConnections()
	sreq, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+apiAddr+httpapi.PathResultsStream, nil)
	require.NoError(t, err)
	sreq.Header.Set("Authorization", "Bearer "+token)
	sresp, err := hc.Do(sreq) // the feed has results: the stream starts at once
	require.NoError(t, err)
	defer func() { _ = sresp.Body.Close() }()
	require.Equal(t, http.StatusOK, sresp.StatusCode)
	streamEnded := make(chan time.Time, 1)
	go func() {
		_, _ = io.Copy(io.Discard, sresp.Body) // until the server ends the stream
		streamEnded <- time.Now()
	}()
	require.NoError(t, os.WriteFile(tokenFile, []byte("# rotated\n"+newToken+"\n"), 0o600))
	hup := time.Now()
	require.NoError(t, front.cmd.Process.Signal(syscall.SIGHUP))
	front.waitLine(t, "API tokens reloaded", 1, 30*time.Second)
	_, err = client.Status(ctx)
	require.ErrorIs(t, err, httpapi.ErrUnauthorized, "the revoked token still works")
	select {
	case at := <-streamEnded:
		step("the revoked token's open result stream ended %v after SIGHUP", at.Sub(hup).Round(time.Millisecond))
	case <-time.After(10 * time.Second): // generous: the reload ends it at once
		t.Fatal("the revoked token's result stream is still open 10 s after the reload")
	}

	for _, p := range g.procs {
		for _, tok := range []string{token, newToken} {
			require.Zero(t, p.count(tok), "%s logged a token", p.name)
		}
	}
	require.Equal(t, 1, backend.count("node certificate reloaded"))
}

// rogueTrust trusts the rogue CA (a stranger's API serves its own CA's certificate).
func rogueTrust(t *testing.T, dir string) *tls.Config {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(b))
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// listenAddr is the HTTP API address a process logged.
func listenAddr(t *testing.T, p *nodeProc) string {
	t.Helper()
	for _, l := range p.log.lines() {
		if strings.Contains(l.text, "http api listening") {
			for _, f := range strings.Fields(l.text) {
				if a, ok := strings.CutPrefix(f, "addr="); ok {
					return a
				}
			}
		}
	}
	t.Fatalf("%s logged no listening address", p.name)
	return ""
}

// TestInsecureWarnsOnce: a node bound beyond loopback without TLS refuses
// to start, naming --insecure; with it, it starts and logs exactly one
// WARN saying what is exposed.
func TestInsecureWarnsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	data := t.TempDir()
	out, err := runForeman(ctx, t, "--http", "0.0.0.0:0", "--data", data, "--produce=false")
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 2, ee.ExitCode())
	require.Contains(t, out, "--insecure")
	require.Contains(t, out, "the HTTP API on 0.0.0.0:0 without TLS")

	g := newProcGroup(t)
	p := g.start(ctx, "insecure", "--http", "0.0.0.0:0", "--data", data, "--produce=false", "--insecure")
	p.waitLine(t, "http api listening", 1, 30*time.Second)
	require.Equal(t, 1, p.count("level=WARN msg=\"--insecure"), "\n%s", p.log.tail(20))
	require.Equal(t, 1, p.count("without tokens"))
	require.Contains(t, fmt.Sprint(p.log.tail(50)), "exposed=")
}
