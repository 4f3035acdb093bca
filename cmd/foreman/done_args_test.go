package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/worker"
)

func TestDoneRetentionAndLimitFlags(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	tests := []struct {
		name      string
		args      []string
		retention time.Duration
		limit     int
		wantErr   string // empty: parses
	}{
		{name: "Defaults", args: nil, retention: master.DefaultDoneRetention, limit: master.DefaultDoneLimit},
		{name: "Both", args: []string{"--done-retention", "1h", "--done-limit", "50000"}, retention: time.Hour, limit: 50000},
		{name: "RetentionNotADuration", args: []string{"--done-retention", "10"}, wantErr: "not a duration"},
		{name: "RetentionZero", args: []string{"--done-retention", "0s"}, wantErr: "must be positive"},
		{name: "LimitZero", args: []string{"--done-limit", "0"}, wantErr: "must be at least 1"},
		{name: "LimitNotANumber", args: []string{"--done-limit", "1e6"}, wantErr: "not a whole number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := parseNodeArgs(append([]string{"2551"}, tt.args...), noEnv, io.Discard)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, errUsage)
				require.ErrorContains(t, err, tt.wantErr)
				require.True(t, strings.Contains(err.Error(), "flag -done-"), "names the flag: %v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.retention, a.doneRetention)
			require.Equal(t, tt.limit, a.doneLimit)
		})
	}
}

func TestGCHeadroomFlag(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		want int64
	}{
		{args: nil, want: defaultGCHeadroom},
		{args: []string{"--gc-headroom", "64MiB"}, want: 64 << 20},
		{args: []string{"--gc-headroom", "off"}, want: 0},
		{args: []string{"--gc-headroom", "0"}, want: 0},
	} {
		a, err := parseNodeArgs(append([]string{"2551"}, tc.args...), noEnv, io.Discard)
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, tc.want, a.gcHeadroom, "%v", tc.args)
	}
	_, err := parseNodeArgs([]string{"2551", "--gc-headroom", "lots"}, noEnv, io.Discard)
	require.ErrorIs(t, err, errUsage)
	require.ErrorContains(t, err, "flag -gc-headroom")
}

func TestMetricsReadable(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{args: []string{"2551"}, want: false},
		{args: []string{"2551", "--metrics", "9100"}, want: true},
		{args: []string{"3001"}, want: true}, // a frontend serves them on its HTTP API
		{args: []string{"0"}, want: false},
		{args: []string{"0", "--metrics", "9101"}, want: true},
		{args: nil, want: false}, // all-in-one without --http
		{args: []string{"--http", "127.0.0.1:8080"}, want: true},
	} {
		a, err := parseNodeArgs(tc.args, noEnv, io.Discard)
		require.NoError(t, err, "%v", tc.args)
		require.Equal(t, tc.want, metricsReadable(a), "%v", tc.args)
	}
}

func TestResultHoldFlag(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	tests := []struct {
		name string
		args []string
		want time.Duration
	}{
		{name: "Default", want: worker.DefaultResultHold},
		{name: "Set", args: []string{"--result-hold", "2ms"}, want: 2 * time.Millisecond},
		{name: "Off", args: []string{"--result-hold", "0"}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := parseNodeArgs(append([]string{"0"}, tt.args...), noEnv, io.Discard)
			require.NoError(t, err)
			require.Equal(t, tt.want, a.resultHold)
			_, wopts, done, err := tuning(a, nil, false)
			require.NoError(t, err)
			t.Cleanup(done)
			_, err = worker.Props(route.Fixed(actor.NewPID("nonhost", "master")), worker.NewRegistry(), wopts...)
			require.NoError(t, err, "the worker takes the node's options")
		})
	}
}
