package frontend

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/messages"
)

// TestWaitAfterTheCallerLeft pins Wait's error when the caller's ctx has
// ended and the outcome is known too (on a busy machine the CANCELLED
// outcome the caller's leaving caused can be delivered first): both
// errors are in its chain, whichever Wait sees first.
func TestWaitAfterTheCallerLeft(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status    messages.WorkStatus
		cancelled bool // errors.Is(err, ErrWorkCancelled)
		ctxErr    bool // errors.Is(err, context.Canceled)
	}{
		{messages.WorkStatus_WORK_STATUS_CANCELLED, true, true},
		{messages.WorkStatus_WORK_STATUS_DONE, false, false}, // the result won the race: it is returned
	} {
		t.Run(tc.status.String(), func(t *testing.T) {
			t.Parallel()
			for range 20 { // Wait's select picks at random between the two
				call := &Call{done: make(chan struct{})}
				call.set(&messages.WorkResult{WorkId: "w", Status: tc.status})
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				res, err := call.Wait(ctx)
				require.Equal(t, tc.status, res.GetStatus())
				require.Equal(t, tc.cancelled, errors.Is(err, ErrWorkCancelled), "%v", err)
				require.Equal(t, tc.ctxErr, errors.Is(err, context.Canceled), "%v", err)
			}
		})
	}
}
