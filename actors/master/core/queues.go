package core

import (
	"log/slog"
	"time"

	"github.com/foreman-actors/foreman/messages"
)

// Inputs of the queue controls (issue 37 item 7).
type (
	// PauseQueue is a PauseQueue: pause or resume a job type.
	PauseQueue struct {
		From *messages.PID
		Msg  *messages.PauseQueue
	}
	// GetQueues is a GetQueues: the state of the job types' queues.
	GetQueues struct {
		From *messages.PID
		Msg  *messages.GetQueues
	}
)

// onPauseQueue journals the pause or resume of a job type (QueuePaused,
// applied at once: a pause holds back the next hand-out already) and
// answers with the queues once it is durable. A resume tells the waiting
// workers of the type's ready work.
func (m *Master) onPauseQueue(now time.Time, in PauseQueue) {
	if !m.serving(now) {
		m.reply(in.From, &messages.QueueList{Unavailable: true, Reason: "master: recovering from the journal; retry later"}, false)
		return
	}
	jt := in.Msg.GetJobType()
	if jt == "" {
		m.reply(in.From, &messages.QueueList{Reason: "job_type is empty: name the job type to pause or resume"}, false)
		return
	}
	if m.state.Paused(jt) != in.Msg.GetPaused() {
		m.persist(&messages.QueuePaused{JobType: jt, Paused: in.Msg.GetPaused(), AtUnixNano: now.UnixNano()})
		verb := "job type resumed"
		if in.Msg.GetPaused() {
			verb = "job type paused"
		}
		m.log(slog.LevelInfo, verb, "job_type", jt)
		if !in.Msg.GetPaused() {
			m.notifyWorkers(now)
		}
	}
	m.reply(in.From, &messages.QueueList{Queues: m.state.QueueStates(now)}, true)
}

func (m *Master) onGetQueues(now time.Time, in GetQueues) {
	if !m.serving(now) {
		m.reply(in.From, &messages.QueueList{Unavailable: true, Reason: "master: recovering from the journal; retry later"}, false)
		return
	}
	m.reply(in.From, &messages.QueueList{Queues: m.state.QueueStates(now)}, true)
}
