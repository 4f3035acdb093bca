package core

import (
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// ExpandGroups returns events with each WorksStarted replaced by the
// WorkStarted of each of its works, and each WorksAccepted by the
// WorkAccepted of each, so that an observer sees one event per work
// whatever the journal record; events itself when it has none.
func ExpandGroups(events []proto.Message) []proto.Message {
	n, found := len(events), false
	for _, ev := range events {
		switch g := ev.(type) {
		case *messages.WorksStarted:
			n, found = n+len(g.GetWorkIds())-1, true
		case *messages.WorksAccepted:
			n, found = n+len(g.GetWorks())-1, true
		}
	}
	if !found {
		return events
	}
	out := make([]proto.Message, 0, n)
	for _, ev := range events {
		switch g := ev.(type) {
		case *messages.WorksStarted:
			for _, id := range g.GetWorkIds() {
				out = append(out, &messages.WorkStarted{WorkId: id, WorkerId: g.GetWorkerId(), AtUnixNano: g.GetAtUnixNano()})
			}
		case *messages.WorksAccepted:
			for _, w := range g.GetWorks() {
				out = append(out, &messages.WorkAccepted{Work: w, AtUnixNano: g.GetAtUnixNano()})
			}
		default:
			out = append(out, ev)
		}
	}
	return out
}

// JobTypeOf names the job type of ev's work, read when ev is written (a
// finished work may be forgotten by the time it is durable).
func (s *WorkState) JobTypeOf(ev proto.Message) string {
	var id string
	switch ev := ev.(type) {
	case *messages.WorkAccepted:
		return ev.GetWork().GetJobType()
	case *messages.WaiterLeft:
		return ev.GetJobType()
	case *messages.WorkStarted:
		id = ev.GetWorkId()
	case *messages.WorkCompleted:
		id = ev.GetWorkId()
	case *messages.WorkerFailed:
		id = ev.GetWorkId()
	case *messages.WorkerTimedOut:
		id = ev.GetWorkId()
	case *messages.WorkExpired:
		id = ev.GetWorkId()
	default:
		return ""
	}
	return s.JobType(id)
}
