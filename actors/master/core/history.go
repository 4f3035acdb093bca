package core

import "github.com/foreman-actors/foreman/messages"

// A work's history is bounded so that a job retried many times cannot grow
// the state without end: it keeps the first historyHead transitions (how the
// job started out) and the latest ones, historyCap in all.
const (
	historyCap  = 16
	historyHead = 4
)

// Aliases for the history kinds, shorter than the generated names.
const (
	histAccepted  = messages.WorkHistoryKind_WORK_HISTORY_KIND_ACCEPTED
	histStarted   = messages.WorkHistoryKind_WORK_HISTORY_KIND_STARTED
	histFailed    = messages.WorkHistoryKind_WORK_HISTORY_KIND_FAILED
	histTimedOut  = messages.WorkHistoryKind_WORK_HISTORY_KIND_TIMED_OUT
	histCompleted = messages.WorkHistoryKind_WORK_HISTORY_KIND_COMPLETED
	histDead      = messages.WorkHistoryKind_WORK_HISTORY_KIND_DEAD
	histRequeued  = messages.WorkHistoryKind_WORK_HISTORY_KIND_REQUEUED
	histCancelled = messages.WorkHistoryKind_WORK_HISTORY_KIND_CANCELLED
)

// histEvent is one transition of a work, as WorkState records it while it
// applies journal events. Every field comes from the event (never from the
// master's clock), so replay rebuilds the same history.
type histEvent struct {
	kind    messages.WorkHistoryKind
	at      int64
	attempt int32
	worker  string
	err     string
}

// appendHistory returns h with ev added, dropping the oldest transition after
// the first historyHead once h holds historyCap.
func appendHistory(h []histEvent, ev histEvent) []histEvent {
	if len(h) >= historyCap {
		copy(h[historyHead:], h[historyHead+1:])
		h = h[:len(h)-1]
	}
	return append(h, ev)
}

// record adds ev to e's history. Call it before changing the fields a plain
// history is made of (see entry.plain).
func (e *entry) record(ev histEvent) {
	e.unplain()
	e.setHistory(appendHistory(e.history(), ev))
}

func historyToProto(h []histEvent) []*messages.WorkHistoryEvent {
	if len(h) == 0 {
		return nil
	}
	out := make([]*messages.WorkHistoryEvent, len(h))
	for i, ev := range h {
		out[i] = &messages.WorkHistoryEvent{Kind: ev.kind, AtUnixNano: ev.at, Attempt: ev.attempt, WorkerId: ev.worker, Error: ev.err}
	}
	return out
}

// historyFromProto restores a snapshot's history, keeping its bound even if
// the snapshot was written with a larger one.
func historyFromProto(in []*messages.WorkHistoryEvent) []histEvent {
	if len(in) == 0 {
		return nil
	}
	h := make([]histEvent, 0, min(len(in), historyCap))
	for _, ev := range in {
		h = appendHistory(h, histEvent{kind: ev.GetKind(), at: ev.GetAtUnixNano(), attempt: ev.GetAttempt(), worker: ev.GetWorkerId(), err: ev.GetError()})
	}
	return h
}
