package worker_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/worker"
)

func TestPermanent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "BadPayload", err: fmt.Errorf("square: %w", worker.ErrBadPayload), want: true},
		{name: "UnknownJobType", err: fmt.Errorf("%w: paint", worker.ErrUnknownJobType), want: true},
		{name: "DeadlinePassed", err: worker.ErrDeadlinePassed, want: true},
		{name: "CallerGone", err: fmt.Errorf("x: %w", worker.ErrCallerGone), want: true},
		{name: "Panic", err: worker.ErrJobPanicked, want: false},
		{name: "WorkerStopping", err: worker.ErrWorkerStopping, want: false},
		{name: "AnyOtherError", err: errors.New("connection refused"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, worker.Permanent(tt.err))
		})
	}
}
