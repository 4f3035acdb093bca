package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/membership/etcdmembers/etcdtest"
)

// TestEtcdTLSProcesses runs real processes with certificates from `foreman
// certs` against etcd over mutual TLS: a backend, a frontend and a worker
// share a TLS etcd whose certificate the cluster CA signed, and a job runs
// end to end over HTTPS; --etcd-ca verifies an etcd whose certificate
// another CA signed; a node with another CA's client certificate, one that
// does not trust etcd's CA, and one without --etcd-ca against the other
// CA's etcd each exit 1 naming the etcd URL and the TLS error. A plain node
// on a plain loopback etcd logs tls=false.
func TestEtcdTLSProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real cluster processes and etcd; skipped with -short")
	}
	etcdtest.Binary(t) // skips loudly, or fails under FOREMAN_TEST_ETCD=require
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	pki, other := t.TempDir(), t.TempDir() // the cluster's CA, and another
	for _, args := range [][]string{
		{"certs", "ca", "--dir", pki},
		{"certs", "node", "--dir", pki, "--name", "etcd", "--hosts", "127.0.0.1,localhost"},
		{"certs", "node", "--dir", pki, "--name", "backend", "--hosts", "127.0.0.1"},
		{"certs", "node", "--dir", pki, "--name", "frontend", "--hosts", "127.0.0.1"},
		{"certs", "node", "--dir", pki, "--name", "worker", "--hosts", "127.0.0.1"},
		{"certs", "ca", "--dir", other},
		{"certs", "node", "--dir", other, "--name", "etcd", "--hosts", "127.0.0.1,localhost"},
		{"certs", "node", "--dir", other, "--name", "stranger", "--hosts", "127.0.0.1"},
	} {
		out, err := runForeman(ctx, t, args...)
		require.NoError(t, err, "foreman %v: %s", args, out)
	}
	in := func(dir, name string) string { return filepath.Join(dir, name) }
	// etcd trusts the cluster CA for client certificates in both cases; the
	// readiness probe presents the worker's certificate.
	etcd := etcdtest.Start(t, etcdtest.WithTLS(etcdtest.FileCerts(t, etcdtest.Files{
		CA: in(pki, "ca.crt"), Cert: in(pki, "etcd.crt"), Key: in(pki, "etcd.key"),
		ClientCert: in(pki, "worker.crt"), ClientKey: in(pki, "worker.key"),
	})))
	otherEtcd := etcdtest.Start(t, etcdtest.WithTLS(etcdtest.FileCerts(t, etcdtest.Files{
		CA: in(pki, "ca.crt"), Cert: in(other, "etcd.crt"), Key: in(other, "etcd.key"), ServerCA: in(other, "ca.crt"),
		ClientCert: in(pki, "worker.crt"), ClientKey: in(pki, "worker.key"),
	})))
	plainEtcd := etcdtest.Start(t)

	ports := pickWalkPorts(t)
	member := "--membership=" + etcd.URL()
	g := newProcGroup(t)
	g.grace = 10 * time.Second
	step := func(format string, args ...any) { t.Logf("%s "+format, append([]any{g.since()}, args...)...) }

	// 1. A cluster on the TLS etcd; a job over HTTPS.
	backend := g.start(ctx, "backend", append([]string{strconv.Itoa(ports.backend1), member, "--data", t.TempDir()}, tlsArgs(pki, "backend")...)...)
	front := g.start(ctx, "frontend", append([]string{strconv.Itoa(ports.frontend), member, "--produce=false"}, tlsArgs(pki, "frontend")...)...)
	worker := g.start(ctx, "worker", append([]string{"0", member, "--workers", "2", "--delay", "0"}, tlsArgs(pki, "worker")...)...)
	for _, p := range []*nodeProc{backend, front, worker} {
		p.waitLine(t, "membership started", 1, 60*time.Second, "etcd="+etcd.URL(), "tls=true")
	}
	front.waitLine(t, "http api listening", 1, 60*time.Second, "tls=true")
	step("backend, frontend and worker registered with etcd over TLS at %s", etcd.URL())
	caPEM, err := os.ReadFile(in(pki, "ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	client, err := httpapi.NewClient("https://127.0.0.1:"+strconv.Itoa(ports.frontend+5000),
		httpapi.WithTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	require.NoError(t, err)
	id, err := client.Submit(ctx, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("12")})
	require.NoError(t, err)
	info, err := client.Wait(ctx, id, 100*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, httpapi.StatusDone, info.Status)
	require.JSONEq(t, "144", string(info.Result))
	step("job %s done over HTTPS: %s", id, info.Result)

	// 2. --etcd-ca: an etcd whose certificate another CA signed; and a
	// plain node on a plain loopback etcd says tls=false.
	viaCA := g.start(ctx, "worker-etcd-ca", append([]string{"0", "--membership=" + otherEtcd.URL(), "--etcd-ca", in(other, "ca.crt")}, tlsArgs(pki, "worker")...)...)
	plain := g.start(ctx, "worker-plain", "0", "--membership="+plainEtcd.URL())
	viaCA.waitLine(t, "membership started", 1, 60*time.Second, "etcd="+otherEtcd.URL(), "tls=true")
	plain.waitLine(t, "membership started", 1, 60*time.Second, "etcd="+plainEtcd.URL(), "tls=false")
	step("--etcd-ca verified %s; the plain node logged tls=false", otherEtcd.URL())

	// 3. Refusals, run side by side: each waits out the 5 s registration.
	refusals := []struct {
		name, url string
		args      []string
		want      string
	}{
		{"client certificate of another CA", etcd.URL(),
			[]string{"--tls-cert", in(other, "stranger.crt"), "--tls-key", in(other, "stranger.key"), "--tls-ca", in(other, "ca.crt"), "--etcd-ca", in(pki, "ca.crt")},
			"refused this node's TLS connection: remote error: tls:"},
		{"does not trust etcd's CA", etcd.URL(),
			append(tlsArgs(pki, "worker"), "--etcd-ca", in(other, "ca.crt")),
			"x509: certificate signed by unknown authority"},
		{"no --etcd-ca for the other CA's etcd", otherEtcd.URL(),
			tlsArgs(pki, "worker"),
			"x509: certificate signed by unknown authority"},
	}
	outs, codes := make([]string, len(refusals)), make([]int, len(refusals))
	var wg sync.WaitGroup
	for i, r := range refusals {
		wg.Go(func() {
			out, err := exec.CommandContext(ctx, binary, append([]string{"0", "--membership=" + r.url}, r.args...)...).CombinedOutput()
			outs[i] = string(out)
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				codes[i] = ee.ExitCode()
			}
		})
	}
	wg.Wait()
	for i, r := range refusals {
		require.Equal(t, 1, codes[i], "%s: exit code; output:\n%s", r.name, outs[i])
		require.Contains(t, outs[i], "cannot register with etcd at "+r.url, r.name)
		require.Contains(t, outs[i], r.want, r.name)
		step("refused (%s): exit 1: %s", r.name, strings.TrimSpace(outs[i][strings.LastIndex(strings.TrimSpace(outs[i]), "\n")+1:]))
	}
	st, err := client.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), st.Workers.Idle+st.Workers.Busy, "the master knows workers other than the 2 real ones: %+v", st.Workers)
}
