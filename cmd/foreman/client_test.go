package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/apitest"
)

// startAPI runs a real all-in-one node (master, one worker, memory journal,
// the square job without delay and one attempt per job) behind the HTTP API
// on a loopback port and returns the API's address.
func startAPI(t *testing.T) (addr string, n *node.Local) {
	t.Helper()
	return apitest.Start(t, testkit.NewSystem(t), testkit.Timeout(), node.WithSquareDelay(0, 0), node.WithMasterOptions(master.WithMaxAttempts(1)))
}

// runCmd runs a client subcommand and returns its exit code and output.
func runCmd(fn func([]string, io.Writer, io.Writer) int, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := fn(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestSubmitCommand(t *testing.T) {
	t.Parallel()
	addr, _ := startAPI(t)
	free := freeAddr(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string // substring of stdout
		wantErr  string // substring of stderr
	}{
		{name: "Accepted", args: []string{"--type", "square", "--payload", "7", "--id", "cli-1", "--to", addr}, wantCode: 0, wantOut: "accepted work cli-1\n"},
		{name: "SameIDAgain", args: []string{"--type", "square", "--payload", "7", "--id", "cli-1", "--to", addr}, wantCode: 0, wantOut: "accepted work cli-1\n"},
		{name: "GeneratedID", args: []string{"--type=square", "--payload=2", "--to=" + addr}, wantCode: 0, wantOut: "accepted work "},
		{name: "Wait", args: []string{"--type", "square", "--payload", "8", "--id", "cli-w", "--wait", "--to", addr}, wantCode: 0, wantOut: "accepted work cli-w\nwork cli-w done: 64\n"},
		{name: "WaitDead", args: []string{"--type", "square", "--payload", "not a number", "--id", "cli-d", "--wait", "--to", addr}, wantCode: 1, wantOut: "work cli-d dead after"},
		{name: "WaitDuration", args: []string{"--type", "square", "--payload", "9", "--id", "cli-w2", "--wait", "10s", "--to", addr}, wantCode: 0, wantOut: "accepted work cli-w2\nwork cli-w2 done: 81\n"},
		{name: "WaitEndsFirst", args: []string{"--type", "sleep", "--payload", "300ms", "--id", "cli-w3", "--wait=20ms", "--to", addr}, wantCode: 3, wantOut: "work cli-w3 still "},
		{name: "BadWait", args: []string{"--type", "square", "--wait=soon", "--to", addr}, wantCode: 2, wantErr: "positive duration"},
		{name: "ServerRefuses", args: []string{"--type", "square", "--id", "bad\x01id", "--to", addr}, wantCode: 1, wantErr: "server answered 400: work id"},
		{name: "Unreachable", args: []string{"--type", "square", "--to", free}, wantCode: 1, wantErr: "cannot reach http://" + free},
		{name: "MissingType", args: []string{"--payload", "7", "--to", addr}, wantCode: 2, wantErr: "--type is required"},
		{name: "ExtraArgument", args: []string{"--type", "square", "7"}, wantCode: 2, wantErr: `unexpected argument "7"`},
		{name: "UnknownFlag", args: []string{"--type", "square", "--bogus"}, wantCode: 2, wantErr: "flag provided but not defined: -bogus"},
		{name: "BadAddress", args: []string{"--type", "square", "--to", "ftp://x"}, wantCode: 2, wantErr: "--to:"},
		{name: "BadTimeout", args: []string{"--type", "square", "--timeout", "0s"}, wantCode: 2, wantErr: "--timeout 0s must be positive"},
		{name: "Help", args: []string{"-h"}, wantCode: 0, wantErr: "usage: foreman submit --type TYPE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(runSubmit, tc.args...)
			require.Equal(t, tc.wantCode, code, "stdout: %s\nstderr: %s", out, errOut)
			require.Contains(t, out, tc.wantOut)
			require.Contains(t, errOut, tc.wantErr)
		})
	}
}

// TestSubmitStdoutFails: when the accepted id cannot be printed, submit
// fails and names the id on stderr (the work is durable; only the output
// is lost).
func TestSubmitStdoutFails(t *testing.T) {
	t.Parallel()
	addr, _ := startAPI(t)
	var errOut bytes.Buffer
	code := runSubmit([]string{"--type", "square", "--payload", "3", "--id", "out-1", "--to", addr}, failingWriter{}, &errOut)
	require.Equal(t, 1, code)
	require.Contains(t, errOut.String(), "foreman submit: accepted work out-1, but writing the output failed: disk full")
}

// failingWriter is a stdout whose every write fails.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestStatusCommand(t *testing.T) {
	t.Parallel()
	addr, n := startAPI(t)
	code, out, errOut := runCmd(runSubmit, "--type", "square", "--payload", "5", "--id", "st-1", "--wait", "--to", addr)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "done: 25")

	t.Run("Overview", func(t *testing.T) {
		code, out, errOut := runCmd(runStatus, "--to", addr)
		require.Equal(t, 0, code, errOut)
		sys := n.System()
		require.Contains(t, out, "master   running at "+sys.Address()+" (member "+sys.ID+")\n")
		require.Contains(t, out, "queue    0 pending, 0 in progress, 1 done, 0 dead, 1 accepted in total\n")
		require.Contains(t, out, "workers  1 idle, 0 busy\n")
		require.Regexp(t, `MEMBER\s+ROLES\s+ADDRESS\s+HTTP\s+MASTER\n`, out)
		require.Regexp(t, sys.ID+` \(answered\)\s+all\s+`+sys.Address()+`\s+`+addr+`\s+yes\n`, out)
	})
	t.Run("Work", func(t *testing.T) {
		code, out, errOut := runCmd(runStatus, "st-1", "--to", addr)
		require.Equal(t, 0, code, errOut)
		require.Equal(t, "work      st-1\nstatus    done\ntype      square\nattempts  1\nresult    25\n", out)
	})
	t.Run("TwoWorks", func(t *testing.T) {
		code, out, errOut := runCmd(runStatus, "st-1", "st-1", "--to", addr)
		require.Equal(t, 0, code, errOut)
		one := "work      st-1\nstatus    done\ntype      square\nattempts  1\nresult    25\n"
		require.Equal(t, one+"\n"+one, out)
	})
	t.Run("StdoutFails", func(t *testing.T) {
		var errOut bytes.Buffer
		code := runStatus([]string{"st-1", "--to", addr}, failingWriter{}, &errOut)
		require.Equal(t, 1, code)
		require.Contains(t, errOut.String(), "foreman status: writing the output: disk full")
	})
	t.Run("UnknownWork", func(t *testing.T) {
		code, out, errOut := runCmd(runStatus, "--to", addr, "st-1", "nope")
		require.Equal(t, 1, code)
		require.Contains(t, out, "work      st-1\n")
		require.Contains(t, errOut, `foreman status: server answered 404: work "nope" is unknown`)
	})
	t.Run("Unreachable", func(t *testing.T) {
		free := freeAddr(t)
		code, _, errOut := runCmd(runStatus, "--to", free)
		require.Equal(t, 1, code)
		require.Contains(t, errOut, "cannot reach http://"+free)
	})
	t.Run("BadFlag", func(t *testing.T) {
		code, _, errOut := runCmd(runStatus, "--nope")
		require.Equal(t, 2, code)
		require.Contains(t, errOut, "run foreman status -h for help")
	})
}

func TestPayloadJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{name: "Number", in: "7", want: "7"},
		{name: "Object", in: `{"n":1}`, want: `{"n":1}`},
		{name: "QuotedString", in: `"250ms"`, want: `"250ms"`},
		{name: "BareWord", in: "hello", want: `"hello"`},
		{name: "Quote", in: `say "hi"`, want: `"say \"hi\""`},
		{name: "Empty", in: "  ", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, string(payloadJSON(tc.in)))
		})
	}
}

// freeAddr returns a loopback address nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return strings.TrimSpace(addr)
}
