package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/worker"
)

func TestRegistry(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, []byte) ([]byte, error) { return nil, nil }
	tests := []struct {
		name    string
		jobType string
		fn      worker.JobFunc
		wantErr error
	}{
		{name: "Ok", jobType: "cube", fn: noop},
		{name: "Duplicate", jobType: "square", fn: noop, wantErr: worker.ErrDuplicateJobType},
		{name: "Empty", jobType: "", fn: noop, wantErr: worker.ErrInvalidJobType},
		{name: "Space", jobType: "a b", fn: noop, wantErr: worker.ErrInvalidJobType},
		{name: "NilFunc", jobType: "nil", wantErr: worker.ErrInvalidJobType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := worker.NewRegistry()
			require.NoError(t, worker.RegisterBuiltins(r))
			err := r.Register(tt.jobType, tt.fn)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			_, ok := r.Lookup(tt.jobType)
			require.True(t, ok)
			require.Equal(t, []string{"cube", "factorize", "long", "sleep", "square"}, r.Types())
		})
	}
}

func TestBuiltins(t *testing.T) {
	t.Parallel()
	r := worker.NewRegistry()
	require.NoError(t, worker.RegisterBuiltins(r, worker.WithSquareDelay(0, 0)))
	tests := []struct {
		name    string
		job     string
		payload string
		want    string
		wantErr string
	}{
		{name: "Square", job: "square", payload: "7", want: "49"},
		{name: "SquareNegative", job: "square", payload: " -3\n", want: "9"},
		{name: "SquareNotInt", job: "square", payload: `"7"`, wantErr: `square: "\"7\"" is not a JSON integer`},
		{name: "SquareFloat", job: "square", payload: "7.5", wantErr: "not a JSON integer"},
		{name: "SquareEmpty", job: "square", payload: "", wantErr: "empty payload"},
		{name: "SquareOverflow", job: "square", payload: "9999999999", wantErr: "too large"},
		{name: "Factorize60", job: "factorize", payload: "60", want: "[2,2,3,5]"},
		{name: "FactorizePrime", job: "factorize", payload: "97", want: "[97]"},
		{name: "FactorizeOne", job: "factorize", payload: "1", wantErr: "send an integer >= 2"},
		{name: "SleepString", job: "sleep", payload: `"1ms"`, want: `"1ms"`},
		{name: "SleepMillis", job: "sleep", payload: "0", want: `"0s"`},
		{name: "SleepNegative", job: "sleep", payload: `"-1s"`, wantErr: "not a non-negative Go duration"},
		{name: "SleepGarbage", job: "sleep", payload: `{}`, wantErr: "not a JSON integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fn, ok := r.Lookup(tt.job)
			require.True(t, ok)
			got, err := fn(context.Background(), []byte(tt.payload))
			if tt.wantErr != "" {
				require.ErrorIs(t, err, worker.ErrBadPayload)
				require.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(got))
		})
	}

	t.Run("SquareDelayUsesTheClockAndCancels", func(t *testing.T) {
		t.Parallel()
		clk := clock.NewManual(epoch)
		r := worker.NewRegistry()
		require.NoError(t, worker.RegisterBuiltins(r, worker.WithSquareDelay(time.Second, time.Second), worker.WithBuiltinClock(clk)))
		fn, _ := r.Lookup("square")
		res := make(chan string, 1)
		go func() { b, _ := fn(context.Background(), []byte("5")); res <- string(b) }()
		waitTimers(t, clk, 1)
		clk.Advance(time.Second)
		require.Equal(t, "25", <-res)

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := fn(ctx, []byte("5"))
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("FactorizeStopsOnCancel", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := worker.Factorize(ctx, []byte("2130093701"))
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("BadDelay", func(t *testing.T) {
		t.Parallel()
		err := worker.RegisterBuiltins(worker.NewRegistry(), worker.WithSquareDelay(2, 1))
		require.ErrorIs(t, err, worker.ErrInvalidOption)
	})
}

// FuzzFactorize checks the factors against the dumb model: they are prime,
// ascending, and multiply back to n.
func FuzzFactorize(f *testing.F) {
	for _, n := range []int64{2, 60, 97, 1024, 999983 * 2} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		if n < 2 || n > 1<<22 {
			t.Skip()
		}
		out, err := worker.Factorize(context.Background(), json.RawMessage(jsonInt(n)))
		require.NoError(t, err)
		var fs []int64
		require.NoError(t, json.Unmarshal(out, &fs))
		prod := int64(1)
		for i, p := range fs {
			require.GreaterOrEqual(t, p, int64(2))
			if i > 0 {
				require.LessOrEqual(t, fs[i-1], p)
			}
			for d := int64(2); d*d <= p; d++ {
				require.NotZero(t, p%d, "%d is not prime", p)
			}
			prod *= p
		}
		require.Equal(t, n, prod)
	})
}

func jsonInt(n int64) []byte { b, _ := json.Marshal(n); return b }
