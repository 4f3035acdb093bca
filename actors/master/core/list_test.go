package core

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/messages"
)

func TestWorkStateList(t *testing.T) {
	t.Parallel()
	s := build(t,
		accepted("p1", "sq", 0), accepted("p2", "sq", 1), accepted("r1", "sq", 2), accepted("d1", "sq", 3), accepted("d2", "sq", 4),
		accepted("x1", "sq", 5), started("r1", "w1", 6), started("d1", "w1", 7), completed("d1", "w1", "r", 8),
		started("d2", "w2", 9), completed("d2", "w2", "r", 10), started("x1", "w2", 11), failed("x1", "w2", 12, 0, true),
		started("p2", "w3", 13), failed("p2", "w3", 14, 20, false))
	ids := func(l *messages.WorkList) []string {
		var out []string
		for _, w := range l.GetWorks() {
			out = append(out, w.GetWorkId())
		}
		return out
	}
	tests := []struct {
		name   string
		status messages.WorkStatus
		limit  int
		want   []string
		total  int64
	}{
		{name: "PendingNewestFirstIncludesRetrying", status: statusAccepted, want: []string{"p2", "p1"}, total: 2},
		{name: "FailedMeansPendingToo", status: statusFailed, want: []string{"p2", "p1"}, total: 2},
		{name: "Running", status: statusRunning, want: []string{"r1"}, total: 1},
		{name: "DoneNewestFirst", status: statusDone, want: []string{"d2", "d1"}, total: 2},
		{name: "LimitKeepsTheTotal", status: statusDone, limit: 1, want: []string{"d2"}, total: 2},
		{name: "Dead", status: statusDead, want: []string{"x1"}, total: 1},
	}
	for _, tt := range tests {
		l := s.List(tt.status, tt.limit)
		require.Equal(t, tt.want, ids(l), tt.name)
		require.Equal(t, tt.total, l.GetTotal(), tt.name)
	}
	r := s.List(statusRunning, 0).GetWorks()[0]
	require.Equal(t, "w1", r.GetWorkerId())
	require.Equal(t, at(6), r.GetStartedAtUnixNano())
	x := s.List(statusDead, 0).GetWorks()[0]
	require.Equal(t, "boom", x.GetLastError())
	require.Equal(t, at(12), x.GetFinishedAtUnixNano())
}
