package gcpace_test

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/gcpace"
)

func TestPercent(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	tests := []struct {
		name           string
		live, headroom uint64
		base, want     int
	}{
		{name: "SmallHeapGetsTheFloor", live: 32 * mib, headroom: 128 * mib, base: 100, want: 400},
		{name: "RoundsUp", live: 3 * mib, headroom: 10 * mib, base: 100, want: 334},
		{name: "LargeHeapKeepsBase", live: 400 * mib, headroom: 128 * mib, base: 100, want: 100},
		{name: "NeverBelowTheProcesssOwn", live: 100 * mib, headroom: 128 * mib, base: 200, want: 200},
		{name: "NothingLiveYet", live: 0, headroom: 128 * mib, base: 100, want: 100},
		{name: "TinyHeapIsCapped", live: 1, headroom: 128 * mib, base: 100, want: 100_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, gcpace.Percent(tt.live, tt.headroom, tt.base))
		})
	}
}

func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestPacer: after a collection the pacer raises GOGC so that this test's
// small heap may grow by the floor, and Stop puts the process's own back.
// Not parallel: GOGC is the process's.
func TestPacer(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	_, err := gcpace.Start(0)
	require.ErrorIs(t, err, gcpace.ErrInvalid)

	p, err := gcpace.Start(512 << 20)
	require.NoError(t, err)
	defer p.Stop()
	require.Eventually(t, func() bool {
		runtime.GC()
		return gogc() > 100
	}, 10*time.Second, 10*time.Millisecond, "GOGC raised after a collection")
	require.Equal(t, int64(p.GOGC()), gogc())
	p.Stop()
	require.Equal(t, int64(100), gogc(), "the process's own GOGC is back")
	runtime.GC()
	time.Sleep(10 * time.Millisecond) // a finalizer that ran late changes nothing
	require.Equal(t, int64(100), gogc())
}

// TestPacerLeavesACollectorTurnedOff alone.
func TestPacerLeavesACollectorTurnedOff(t *testing.T) {
	base := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(base)
	p, err := gcpace.Start(64 << 20)
	require.NoError(t, err)
	defer p.Stop()
	runtime.GC()
	require.Equal(t, -1, p.GOGC())
	require.Equal(t, -1, debug.SetGCPercent(-1))
}
