package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/throttler"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

// TestRun makes real HTTP requests on 127.0.0.1 through a strict throttler
// and checks the report: every request answered, none over the limit in
// the throttler's own periods.
func TestRun(t *testing.T) {
	t.Parallel()
	cfg := config{requests: 12, rate: 4, per: 200 * time.Millisecond, mode: throttler.ModeSlidingWindow, burst: 1}
	require.NoError(t, cfg.validate())
	ctx, cancel := context.WithTimeout(context.Background(), cfg.deadline())
	defer cancel()
	var out bytes.Buffer
	start := time.Now()
	require.NoError(t, run(ctx, cfg, &out))
	took := time.Since(start)
	t.Log(out.String())
	require.GreaterOrEqual(t, took, 400*time.Millisecond, "12 at 4 per 200ms need two more periods after the first")
	require.Contains(t, out.String(), "12 requests at 4/200ms (mode sliding_window)")
	require.Contains(t, out.String(), "all 12 requests answered")
	require.Contains(t, out.String(), "period  1:   4 requests")
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := config{requests: 1, rate: 1, per: time.Second, mode: throttler.ModeTimer, burst: 1}
	tests := []struct {
		name   string
		change func(*config)
		want   string
	}{
		{name: "Requests", change: func(c *config) { c.requests = 0 }, want: "-requests"},
		{name: "Rate", change: func(c *config) { c.rate = 0 }, want: "-rate"},
		{name: "Per", change: func(c *config) { c.per = time.Hour }, want: "-per"},
		{name: "Burst", change: func(c *config) { c.burst = 2 }, want: "token_bucket"},
	}
	require.NoError(t, ok.validate())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := ok
			tt.change(&c)
			err := c.validate()
			require.Error(t, err)
			require.True(t, strings.Contains(err.Error(), tt.want), err.Error())
		})
	}
}
