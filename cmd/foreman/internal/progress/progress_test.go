package progress

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
)

func TestFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		done, total int64
		elapsed     time.Duration
		want        string
	}{
		{name: "Start", done: 0, total: 1000, elapsed: 0, want: "jobs 0/1,000 (0.0%) 0/s ETA ?"},
		{name: "Midway", done: 2500, total: 10000, elapsed: 5 * time.Second, want: "jobs 2,500/10,000 (25.0%) 500/s ETA 15s"},
		{name: "ShortETA", done: 900, total: 1000, elapsed: 3 * time.Second, want: "jobs 900/1,000 (90.0%) 300/s ETA 300ms"},
		{name: "Done", done: 1000, total: 1000, elapsed: 2500 * time.Millisecond, want: "jobs 1,000/1,000 (100.0%) 400/s done in 2.5s"},
		{name: "Overshoot", done: 1200, total: 1000, elapsed: time.Second, want: "jobs 1,200/1,000 (100.0%) 1,200/s done in 1s"},
		{name: "UnknownTotal", done: 1234567, total: 0, elapsed: 10 * time.Second, want: "jobs 1,234,567 123,457/s"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Format("jobs", tt.done, tt.total, tt.elapsed), tt.name)
	}
}

func TestReporterTerminal(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Unix(0, 0))
	var out strings.Builder
	r := New("jobs", 100, &out, true, clk)
	r.Add(10)
	r.Tick()
	require.Empty(t, out.String(), "nothing before the first interval")
	clk.Advance(TerminalEvery)
	r.Tick()
	require.Equal(t, "\rjobs 10/100 (10.0%) 50/s ETA 1.8s\x1b[K", out.String())
	r.Add(90)
	clk.Advance(TerminalEvery)
	r.Finish()
	require.True(t, strings.HasSuffix(out.String(), "\rjobs 100/100 (100.0%) 250/s done in 400ms\x1b[K\n"), "%q", out.String())
}

func TestReporterLog(t *testing.T) {
	t.Parallel()
	clk := clock.NewManual(time.Unix(0, 0))
	var out strings.Builder
	r := New("bench", 0, &out, false, clk)
	r.Add(50)
	clk.Advance(TerminalEvery)
	r.Tick()
	require.Empty(t, out.String(), "a log gets a line only every LogEvery")
	clk.Advance(LogEvery)
	r.Tick()
	r.Tick()
	require.Equal(t, "bench 50 10/s\n", out.String(), "one plain line, no carriage return")
}
