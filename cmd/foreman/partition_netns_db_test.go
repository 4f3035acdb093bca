package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/membership/etcdmembers/etcdtest"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/netns"
)

// TestPartitionNetnsPostgresEtcd is TestPartitionNetns across hosts the way
// a deployment on several machines runs (issue 13, item 3): a fourth host
// runs PostgreSQL and etcd; the backends on host1 and host2 each have their
// own --data directory and share the journal postgres://host4/...; every
// node finds the others with --membership etcd://host4:PORT. The phases and
// checks are the same.
//
// It needs PostgreSQL's server binaries and etcd besides what
// TestPartitionNetns needs; without them it skips, loudly, unless
// FOREMAN_TEST_POSTGRES_DSN or FOREMAN_TEST_ETCD=require is set (CI),
// where it fails instead.
func TestPartitionNetnsPostgresEtcd(t *testing.T) {
	etcdtest.Binary(t)
	pgBinaries(t)
	partitionNetns(t, true)
}

// netnsServices are the services of the fourth host.
type netnsServices struct {
	journal string // postgres://... URL of the shared journal
	etcd    string // etcd://host:port membership URL
}

// pgBinaries returns the directory of PostgreSQL's server binaries, or
// skips t (fails it in CI) when they are not installed.
func pgBinaries(t *testing.T) string {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		if os.Getenv("FOREMAN_TEST_POSTGRES_DSN") != "" {
			t.Fatal("FOREMAN_TEST_POSTGRES_DSN is set but no /usr/lib/postgresql/*/bin/pg_ctl is installed: this test runs its own server")
		}
		t.Skip("SKIPPING: no /usr/lib/postgresql/*/bin/pg_ctl; install postgresql (or run .ci/run) to run this test")
	}
	return filepath.Dir(bins[len(bins)-1])
}

// startNetnsServices starts etcd and a dedicated PostgreSQL in h, both
// listening on h's address, and stops them in t.Cleanup (before the lab
// is deleted: cleanups run last-registered first).
func startNetnsServices(ctx context.Context, t *testing.T, h *netns.Host) *netnsServices {
	t.Helper()
	addr := h.Addr.String()
	etcd := etcdtest.Start(t, etcdtest.WithHost(addr), etcdtest.WithCommandPrefix("ip", "netns", "exec", h.Name))
	t.Logf("etcd on %s: %s", h, etcd.URL())

	bin := pgBinaries(t)
	// PostgreSQL refuses to run as root: its directory belongs to the
	// postgres user, outside t.TempDir (whose parents only root may enter).
	pgUser, err := user.Lookup("postgres")
	require.NoError(t, err, "the postgres user (made by Debian's postgresql package)")
	uid, _ := strconv.Atoi(pgUser.Uid)
	gid, _ := strconv.Atoi(pgUser.Gid)
	dir, err := os.MkdirTemp("", "foreman-netns-pg.")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chown(dir, uid, gid))
	data := filepath.Join(dir, "data")
	asPostgres := func(name string, args ...string) []string {
		return append([]string{"runuser", "-u", "postgres", "--", filepath.Join(bin, name)}, args...)
	}
	run := func(argv []string) {
		t.Helper()
		out, err := h.Command(ctx, argv[0], argv[1:]...).CombinedOutput()
		require.NoError(t, err, "%v: %s", argv, out)
	}
	run(asPostgres("initdb", "-D", data, "-U", "foreman", "--auth=trust", "-E", "UTF8", "--no-instructions"))
	// Trust the lab's subnet (throwaway server; the hosts and the test).
	hba, err := os.OpenFile(filepath.Join(data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = hba.WriteString("host all all samenet trust\n")
	require.NoError(t, err)
	require.NoError(t, hba.Close())
	const port = "5432" // a fresh namespace: every port is free
	run(asPostgres("pg_ctl", "-D", data, "-l", filepath.Join(dir, "server.log"), "-w", "-t", "60",
		"-o", "-c listen_addresses="+addr+" -p "+port+" -k "+dir+" -c max_connections=200", "start"))
	t.Cleanup(func() {
		argv := asPostgres("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Errorf("stopping the PostgreSQL of %s: %v: %s", h, err, out)
		}
	})
	run(asPostgres("createdb", "-h", addr, "-p", port, "-U", "foreman", "foreman"))
	svc := &netnsServices{
		journal: "postgres://foreman@" + net.JoinHostPort(addr, port) + "/foreman?sslmode=disable",
		etcd:    etcd.URL(),
	}
	t.Logf("PostgreSQL on %s: %s", h, svc.journal)
	return svc
}

// loadJournal replays the master's stream from the cluster's journal:
// the SQLite file in the shared data directory, or PostgreSQL.
func (c *netnsCluster) loadJournal() (*master.WorkState, error) {
	if c.svc == nil {
		return loadState(filepath.Join(c.data, node.JournalFile))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j, err := journal.OpenPostgres(ctx, c.svc.journal)
	if err != nil {
		return nil, err
	}
	return loadStateFrom(j)
}
