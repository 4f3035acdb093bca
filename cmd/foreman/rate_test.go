package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// TestRateCommandUsage: a bad `foreman rate` command line is exit 2 with
// a message that says what to type, before any request.
func TestRateCommandUsage(t *testing.T) {
	t.Parallel()
	free := freeAddr(t) // nothing listens: a request would fail with exit 1
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"NoSubcommand", nil, "want set or list, e.g. foreman rate set square=20/s"},
		{"UnknownSubcommand", []string{"get"}, `unknown subcommand "get": want set or list`},
		{"SetNothing", []string{"set"}, "want one TYPE=COUNT/PERIOD, e.g. foreman rate set square=20/s, got 0"},
		{"SetTwo", []string{"set", "square=1/s", "cube=2/s"}, "got 2"},
		{"SetNoEquals", []string{"set", "square"}, `"square": want TYPE=COUNT/PERIOD, e.g. square=20/s`},
		{"SetNoType", []string{"set", "=20/s"}, `"=20/s": want TYPE=COUNT/PERIOD`},
		{"SetBadRate", []string{"set", "square=20"}, `rate "20": no '/' between the count and the period`},
		{"SetBadPeriod", []string{"set", "square=20/fortnight"}, `period "fortnight" is neither s, m, h`},
		{"ListExtra", []string{"list", "square"}, `unexpected argument "square"; list takes none`},
		{"ListStrict", []string{"list", "--strict"}, "--strict belongs to set"},
		{"BadTimeout", []string{"list", "--timeout", "0s"}, "--timeout 0s must be positive"},
		{"BadAddress", []string{"list", "--to", "ftp://x"}, "--to:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(runRate, append(tc.args, "--to", free)...)
			if tc.name == "BadAddress" {
				code, out, errOut = runCmd(runRate, tc.args...)
			}
			require.Equal(t, 2, code, "stdout: %s\nstderr: %s", out, errOut)
			require.Contains(t, errOut, tc.wantErr)
			require.Empty(t, out)
		})
	}
	code, _, errOut := runCmd(runRate, "-h")
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "usage: foreman rate set TYPE=COUNT/PERIOD [--strict]")
	code, _, errOut = runCmd(runRate, "list", "--to", free)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "cannot reach http://"+free)
}

// TestRateTable: the list's columns, and a throttler that did not answer.
func TestRateTable(t *testing.T) {
	t.Parallel()
	require.Equal(t, "no rate limits (start the backends with --rate, e.g. --rate square=20/s)\n", rateTable(nil))
	got := rateTable([]httpapi.RateInfo{
		{Type: "square", Rate: "20/s", Mode: "strict", Node: "127.0.0.1:2551", Queued: 2, Granted: 40, Refused: 1},
		{Type: "cube", Error: "node: asking the throttler of \"cube\": timeout"},
	})
	require.Equal(t, "TYPE\tRATE\tMODE\tNODE\tQUEUED\tGRANTED\tREFUSED\n"+
		"square\t20/s\tstrict\t127.0.0.1:2551\t2\t40\t1\n"+
		"cube\t-\t-\t-\t-\t-\t-\tnode: asking the throttler of \"cube\": timeout\n", got)
}
