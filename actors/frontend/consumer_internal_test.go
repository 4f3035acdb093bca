package frontend

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend/core"
	"github.com/foreman-actors/foreman/messages"
)

// TestConsumerDedupesRedeliveredOutcomes: every distinct outcome of a work
// id is consumed once; the same outcome delivered again (the feed read
// again from an older cursor after a restart, pub-sub delivering twice) is
// a duplicate.
func TestConsumerDedupesRedeliveredOutcomes(t *testing.T) {
	t.Parallel()
	var consumed, dups []string
	r := &consumer{log: slog.New(slog.DiscardHandler), core: core.NewConsumer(core.ConsumerConfig{Window: 16}), cfg: config{
		onResult:    func(m *messages.WorkResult) { consumed = append(consumed, m.GetWorkId()+" "+m.GetStatus().String()) },
		onDuplicate: func(m *messages.WorkResult) { dups = append(dups, m.GetWorkId()+" "+m.GetStatus().String()) },
	}}
	feed := func(id string, status messages.WorkStatus, seq int64) {
		r.consume(&messages.WorkResult{WorkId: id, Status: status}, seq)
	}
	const (
		done      = messages.WorkStatus_WORK_STATUS_DONE
		dead      = messages.WorkStatus_WORK_STATUS_DEAD
		cancelled = messages.WorkStatus_WORK_STATUS_CANCELLED
	)
	// x died, was re-submitted and died again, then re-submitted and done;
	// y was cancelled, then re-submitted and done.
	feed("x", dead, 5)
	feed("y", cancelled, 6)
	feed("x", dead, 8)
	feed("y", done, 9)
	feed("x", done, 11)
	// The feed read again from seq 0 (the cursor was not saved).
	feed("x", dead, 5)
	feed("y", cancelled, 6)
	feed("x", dead, 8)
	feed("y", done, 9)
	feed("x", done, 11)
	// Pub-sub's completions carry no status and no feed position.
	r.consume(&messages.WorkResult{WorkId: "z"}, 0)
	r.consume(&messages.WorkResult{WorkId: "z"}, 0)

	require.Equal(t, []string{"x WORK_STATUS_DEAD", "y WORK_STATUS_CANCELLED", "x WORK_STATUS_DEAD",
		"y WORK_STATUS_DONE", "x WORK_STATUS_DONE", "z WORK_STATUS_UNKNOWN"}, consumed)
	require.Len(t, dups, 6)
	require.Equal(t, Stats{Consumed: 6, Duplicates: 6}, r.core.Stats())
}
