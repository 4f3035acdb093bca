package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReadAheadDepth(t *testing.T) {
	t.Parallel()
	ms := int64(time.Millisecond)
	tests := []struct {
		name          string
		window, max   int
		rtt, job      []int64 // samples, oldest first; nil: none yet
		want, wantThr int
	}{
		{name: "NoSamplesYet", window: 16, max: 16, want: 0, wantThr: 1},
		{name: "NoRoundTripYet", window: 16, max: 16, job: []int64{10}, want: 0, wantThr: 1},
		{name: "NoJobYet", window: 16, max: 16, rtt: []int64{ms}, want: 0, wantThr: 1},
		{name: "Off", window: 16, max: 0, rtt: []int64{ms}, job: []int64{0}, want: 0, wantThr: 1},
		{name: "NoOpJobsReadAFullMax", window: 16, max: 16, rtt: []int64{ms}, job: []int64{0}, want: 16, wantThr: 16},
		{name: "JobAsLongAsTheRoundTrip", window: 16, max: 16, rtt: []int64{ms}, job: []int64{ms}, want: 16, wantThr: 16},
		{name: "JobTwiceTheRoundTrip", window: 16, max: 16, rtt: []int64{ms}, job: []int64{2 * ms}, want: 8, wantThr: 8},
		{name: "CappedByMax", window: 16, max: 4, rtt: []int64{ms}, job: []int64{ms / 2}, want: 4, wantThr: 4},
		{name: "LongJobsNone", window: 16, max: 16, rtt: []int64{ms}, job: []int64{20 * ms}, want: 0, wantThr: 1},
		// A job's time is kept as measured (to an hour): minutes-long
		// jobs park nothing even behind a huge window.
		{name: "MinutesLongJobsNone", window: 4096, max: 4096, rtt: []int64{ms}, job: []int64{int64(90 * time.Second)}, want: 0, wantThr: 1},
		{name: "SlowRoundTripNoOverflow", window: 4096, max: 4096, rtt: []int64{int64(time.Hour)}, job: []int64{1}, want: 4096, wantThr: 4096},
		{name: "HourLongJobNoOverflow", window: 4096, max: 4096, rtt: []int64{int64(time.Hour)}, job: []int64{int64(1000 * time.Hour)}, want: 1, wantThr: 1},
		// The average moves an eighth of the way to each new sample.
		{name: "AverageFollowsSlowly", window: 16, max: 16, rtt: []int64{ms}, job: []int64{ms / 4, 9 * ms / 4}, want: 16, wantThr: 16},
		{name: "AverageFollows", window: 8, max: 16, rtt: []int64{ms, 9 * ms}, job: []int64{4 * ms}, want: 4, wantThr: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := readAhead{max: tt.max, window: tt.window}
			for _, d := range tt.job {
				r.jobDone(d)
			}
			for i, d := range tt.rtt {
				at := int64(1_000_000_000) * int64(i+1)
				r.requested(at)
				r.delivered(at + d)
			}
			require.Equal(t, tt.want, r.depth())
			require.Equal(t, tt.wantThr, r.threshold())
		})
	}
}

func TestReadAheadSamples(t *testing.T) {
	t.Parallel()
	ms := int64(time.Millisecond)
	t.Run("OldestUnansweredRequestIsTimed", func(t *testing.T) {
		t.Parallel()
		r := readAhead{max: 16, window: 16}
		r.requested(10 * ms)
		r.requested(12 * ms) // answered no sooner than the first
		r.delivered(14 * ms)
		require.Equal(t, 4*ms, r.rtt.v)
		r.delivered(15 * ms) // no request open: no sample
		require.Equal(t, 4*ms, r.rtt.v)
	})
	t.Run("NothingReadyIsNoRoundTrip", func(t *testing.T) {
		t.Parallel()
		r := readAhead{max: 16, window: 16}
		r.requested(10 * ms)
		r.nothingReady() // the master had no work: WorkIsReady came later
		r.requested(5000 * ms)
		r.delivered(5001 * ms)
		require.Equal(t, ms, r.rtt.v)
	})
	t.Run("SamplesAreBounded", func(t *testing.T) {
		t.Parallel()
		r := readAhead{max: 16, window: 16}
		r.jobDone(int64(1000 * time.Hour))
		require.Equal(t, maxJobSample, r.job.v)
		r.jobDone(-5) // a clock that stepped back
		require.Equal(t, maxJobSample-maxJobSample/8, r.job.v)
		r.requested(ms)
		r.delivered(ms + int64(time.Minute)) // a failover
		require.Equal(t, maxRTTSample, r.rtt.v)
	})
	t.Run("ALongJobIsForgottenWithinDozensOfShortOnes", func(t *testing.T) {
		t.Parallel()
		r := readAhead{max: 16, window: 16}
		r.requested(ms)
		r.delivered(2 * ms)
		r.jobDone(int64(10 * time.Minute))
		require.Equal(t, 0, r.depth())
		n := 0
		for ; n < 1000 && r.depth() < 16; n++ {
			r.jobDone(0)
		}
		require.Less(t, n, 150, "short jobs after a long one")
	})
}
