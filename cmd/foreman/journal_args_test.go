package main

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJournalArgs: --journal and FOREMAN_JOURNAL, which wins, which nodes
// take them, and what a bad URL says (exit 2, password masked).
func TestJournalArgs(t *testing.T) {
	t.Parallel()
	const pg = "postgres://foreman:" + secretPW + "@db.example/foreman"
	tests := []struct {
		name        string
		args        []string
		env         string
		wantJournal string
		wantFromEnv bool
		wantErr     string // empty: must parse
	}{
		{name: "DefaultIsEmpty", args: nil, wantJournal: ""},
		{name: "Flag", args: []string{"--journal", "sqlite:/tmp/j.db"}, wantJournal: "sqlite:/tmp/j.db"},
		{name: "Env", env: pg, wantJournal: pg, wantFromEnv: true},
		{name: "FlagWinsOverEnv", args: []string{"--journal", "sqlite:j.db"}, env: pg, wantJournal: "sqlite:j.db"},
		{name: "BackendFlag", args: []string{"2551", "--journal", pg}, wantJournal: pg},
		{name: "FrontendEnvKept", args: []string{"3001"}, env: pg, wantJournal: pg, wantFromEnv: true}, // warned about at start
		{name: "FrontendFlag", args: []string{"3001", "--journal", pg}, wantErr: "a frontend node has no journal"},
		{name: "WorkerFlag", args: []string{"0", "--journal", "sqlite:j.db"}, wantErr: "a worker node has no journal"},
		{name: "UnknownScheme", args: []string{"--journal", "mysql://root:" + secretPW + "@db/x"}, wantErr: `--journal: persistence: invalid argument: journal URL scheme "mysql" is not supported`},
		{name: "EmptySQLitePath", args: []string{"--journal", "sqlite:"}, wantErr: "names no file"},
		{name: "FlagEmptyString", args: []string{"--journal", ""}, wantErr: "empty journal URL"},
		{name: "BadEnv", env: "journal.db", wantErr: "FOREMAN_JOURNAL: persistence: invalid argument: journal URL \"journal.db\" has no scheme"},
		{name: "MalformedPostgres", args: []string{"--journal", "postgres://foreman:" + secretPW + "@db:port/x"}, wantErr: "not a valid PostgreSQL URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			getenv := func(k string) string {
				if k == journalEnv {
					return tt.env
				}
				return ""
			}
			a, err := parseNodeArgs(tt.args, getenv, io.Discard)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, errUsage)
				require.ErrorContains(t, err, tt.wantErr)
				require.NotContains(t, err.Error(), secretPW)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantJournal, a.journal)
			require.Equal(t, tt.wantFromEnv, a.journalFromEnv)
		})
	}
}

// secretPW is the password of the test URLs: no message may show it.
const secretPW = "pw-do-not-print"

// TestJournalUnreachable: a PostgreSQL journal nobody answers at fails the
// start with exit 1 (as other start errors), naming the URL with its
// password masked.
func TestJournalUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // now nothing listens there: refused at once
	url := "postgres://foreman:" + secretPW + "@" + addr + "/foreman?sslmode=disable"
	for _, role := range []struct{ name, port string }{{"AllInOne", ""}, {"Backend", "0"}} {
		t.Run(role.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"--journal", url, "--jobs", "1"}
			if role.port != "" {
				// A backend on a port: 2000-2999 picks the role.
				args = []string{freeBackendPort(t), "--journal", url, "--seeds", "127.0.0.1:1"}
			}
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			require.Equal(t, 1, code, "stderr: %s", stderr.String())
			require.Contains(t, stderr.String(), "cannot open the journal postgres://foreman:xxxxx@"+addr+"/foreman?sslmode=disable")
			require.NotContains(t, stderr.String(), secretPW)
		})
	}
}

// freeBackendPort is a backend port (2000-2999) free at 127.0.0.1 now,
// with its membership port (+4000).
func freeBackendPort(t *testing.T) string {
	t.Helper()
	p := pickWalkPorts(t)
	return strconv.Itoa(p.backend1)
}
