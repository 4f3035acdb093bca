package core

import (
	"sort"

	"github.com/foreman-actors/foreman/messages"
)

// Bounds of a ListWork answer.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// List answers ListWork: the works in status (ACCEPTED and FAILED both mean
// pending), newest first (by finishing, start or arrival time), at most limit
// of them (0: DefaultListLimit; capped at MaxListLimit), and how many are in
// that status in all.
func (s *WorkState) List(status messages.WorkStatus, limit int) *messages.WorkList {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	var match []*entry
	for _, e := range s.entries {
		if e.held || !listed(e, status) {
			continue
		}
		match = append(match, e)
	}
	key := func(e *entry) int64 {
		switch {
		case e.finished():
			return e.finishedAt
		case e.status == statusRunning:
			return e.startedAt
		default:
			return e.order
		}
	}
	sort.Slice(match, func(i, j int) bool {
		if ki, kj := key(match[i]), key(match[j]); ki != kj {
			return ki > kj
		}
		return match[i].id < match[j].id
	})
	out := &messages.WorkList{Total: int64(len(match))}
	for _, e := range match[:min(len(match), limit)] {
		_, startedAt, workerID := e.shown()
		out.Works = append(out.Works, &messages.WorkSummary{
			WorkId: e.id, JobType: e.jobType, Status: e.status, Attempts: e.attempts,
			LastError: e.lastError(), WorkerId: workerID, StartedAtUnixNano: startedAt, FinishedAtUnixNano: e.finishedAt,
		})
	}
	return out
}

func listed(e *entry, status messages.WorkStatus) bool {
	if status == statusAccepted || status == statusFailed {
		return e.pending()
	}
	return e.status == status
}
