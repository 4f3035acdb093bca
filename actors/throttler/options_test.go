package throttler_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/throttler"
)

func TestNewFSMRejectsBadOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rate throttler.Rate
		opts []throttler.Option
		want error
	}{
		{name: "ZeroCalls", rate: throttler.Rate{Per: time.Second}, want: throttler.ErrInvalidRate},
		{name: "ZeroPer", rate: throttler.Rate{Calls: 1}, want: throttler.ErrInvalidRate},
		{name: "StrictTooManyCalls", rate: throttler.PerHour(throttler.MaxStrictCalls + 1), opts: []throttler.Option{throttler.WithMode(throttler.ModeSlidingWindow)}, want: throttler.ErrInvalidRate},
		{name: "BadMode", rate: throttler.PerSecond(1), opts: []throttler.Option{throttler.WithMode(9)}, want: throttler.ErrInvalidOption},
		{name: "BadBurst", rate: throttler.PerSecond(1), opts: []throttler.Option{throttler.WithBurst(0)}, want: throttler.ErrInvalidOption},
		{name: "BurstWithoutBucket", rate: throttler.PerSecond(1), opts: []throttler.Option{throttler.WithBurst(2)}, want: throttler.ErrInvalidOption},
		{name: "BadMaxQueue", rate: throttler.PerSecond(1), opts: []throttler.Option{throttler.WithMaxQueue(0)}, want: throttler.ErrInvalidOption},
		{name: "BadOverflow", rate: throttler.PerSecond(1), opts: []throttler.Option{throttler.WithOverflow(0)}, want: throttler.ErrInvalidOption},
		{name: "NilLogger", rate: throttler.PerSecond(1), opts: []throttler.Option{throttler.WithLogger(nil)}, want: throttler.ErrInvalidOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := throttler.NewFSM[string, int](tt.rate, tt.opts...)
			require.ErrorIs(t, err, tt.want)
			_, err = throttler.Props(tt.rate, tt.opts...)
			require.ErrorIs(t, err, tt.want)
		})
	}
	t.Run("LargeTimerRateIsFine", func(t *testing.T) {
		t.Parallel()
		_, err := throttler.NewFSM[string, int](throttler.PerHour(1 << 30))
		require.NoError(t, err)
	})
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
var allModes = []throttler.Mode{throttler.ModeTimer, throttler.ModeSlidingWindow, throttler.ModeTokenBucket}
