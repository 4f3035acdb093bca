package core

import "github.com/foreman-actors/foreman/messages"

// slots is the worker's pure bookkeeping: which executor slot runs which
// work, work received beyond the free slots (queued locally, never dropped),
// and completed results waiting for the master's Ack. It has no actors, no
// clock and no I/O; the actor shell performs what its methods return.
//
// Invariants (checked by the property test): a work id is in at most one of
// running, queue and unacked; len(queue) > 0 only while every slot is busy;
// capacity(ahead) >= 0.
type slots struct {
	run     []*messages.Work  // run[i] is the work executor i runs; nil = free
	queue   []*messages.Work  // accepted beyond the free slots, FIFO
	unacked map[string]result // work id -> result, WorkIsDone sent, no Ack yet
	// at indexes run and queue: work id -> its slot, or -1 while queued.
	// Scanning them instead was half of a worker's CPU with a window and
	// a read-ahead of 64.
	at         map[string]int
	nbusy      int // slots that run work
	maxUnacked int
}

// result is a completed work's result awaiting its Ack, with the name of
// its resend timer (made once: it is armed at completion and stopped at the
// Ack).
type result struct {
	value []byte
	timer string
}

// offerResult says what the shell does with an offered Work.
type offerResult int

const (
	// offerStart: run the work on the returned slot.
	offerStart offerResult = iota + 1
	// offerQueued: every slot is busy; the work waits in the local queue.
	offerQueued
	// offerRunning: the id is already running or queued here; ignore it.
	offerRunning
	// offerDone: the id completed here and awaits its Ack; re-send WorkIsDone.
	offerDone
)

func newSlots(window, maxUnacked int) *slots {
	return &slots{
		run:        make([]*messages.Work, window),
		unacked:    make(map[string]result),
		at:         make(map[string]int, window),
		maxUnacked: maxUnacked,
	}
}

// busy returns how many slots run work.
func (s *slots) busy() int { return s.nbusy }

// capacity is how many more jobs the worker can take now: free slots and
// ahead (the read-ahead depth: works to queue beyond the window) minus the
// local queue, limited by the room left for unacknowledged results.
func (s *slots) capacity(ahead int) int {
	c := len(s.run) + ahead - s.nbusy - len(s.queue)
	if room := s.maxUnacked - len(s.unacked) - s.nbusy - len(s.queue); room < c {
		c = room
	}
	return max(c, 0)
}

// find returns where a work id is: the slot running it (>= 0), -1 if queued,
// -2 if unknown.
func (s *slots) find(id string) int {
	if i, ok := s.at[id]; ok {
		return i
	}
	return -2
}

// offer takes a Work from the master.
func (s *slots) offer(w *messages.Work) (offerResult, int) {
	id := w.GetWorkId()
	if _, ok := s.unacked[id]; ok {
		return offerDone, -1
	}
	if s.find(id) != -2 {
		return offerRunning, -1
	}
	if s.nbusy < len(s.run) {
		for i, r := range s.run {
			if r == nil {
				s.start(i, w)
				return offerStart, i
			}
		}
	}
	s.queue = append(s.queue, w)
	s.at[id] = -1
	return offerQueued, -1
}

// free empties slot i and, if work is queued, starts the next one there; it
// returns that work or nil.
func (s *slots) free(i int) *messages.Work {
	if w := s.run[i]; w != nil {
		delete(s.at, w.GetWorkId())
		s.run[i] = nil
		s.nbusy--
	}
	if len(s.queue) == 0 {
		return nil
	}
	next := s.queue[0]
	s.queue[0] = nil
	s.queue = s.queue[1:]
	s.start(i, next)
	return next
}

// start runs w in the free slot i.
func (s *slots) start(i int, w *messages.Work) {
	s.run[i] = w
	s.at[w.GetWorkId()] = i
	s.nbusy++
}

// running returns the work in slot i, or nil.
func (s *slots) running(i int) *messages.Work {
	if i < 0 || i >= len(s.run) {
		return nil
	}
	return s.run[i]
}

// complete records the result of the work in slot i. It reports false (and
// changes nothing) when slot i does not run workID: a stale report. next is
// the queued work now started in slot i, if any.
func (s *slots) complete(i int, workID string, res []byte) (next *messages.Work, ok bool) {
	if w := s.running(i); w == nil || w.GetWorkId() != workID {
		return nil, false
	}
	s.unacked[workID] = result{value: res, timer: timerResend + workID}
	return s.free(i), true
}

// fail drops the work of slot i (the executor failed). It returns the failed
// work (nil if the slot was free or runs another id than workID, when workID
// is not "") and the queued work now started in slot i.
func (s *slots) fail(i int, workID string) (failed, next *messages.Work) {
	w := s.running(i)
	if w == nil || (workID != "" && w.GetWorkId() != workID) {
		return nil, nil
	}
	return w, s.free(i)
}

// ack forgets an acknowledged result; it returns the name of its resend
// timer and whether one was waiting.
func (s *slots) ack(workID string) (timer string, ok bool) {
	r, ok := s.unacked[workID]
	if !ok {
		return "", false
	}
	delete(s.unacked, workID)
	return r.timer, true
}

// result returns the unacknowledged result of workID.
func (s *slots) result(workID string) ([]byte, bool) {
	r, ok := s.unacked[workID]
	return r.value, ok
}

// takeQueue empties the local queue and returns it.
func (s *slots) takeQueue() []*messages.Work {
	q := s.queue
	s.queue = nil
	for _, w := range q {
		delete(s.at, w.GetWorkId())
	}
	return q
}

// drain empties every slot and the queue and returns their work: what the
// worker hands back when it stops.
func (s *slots) drain() []*messages.Work {
	var out []*messages.Work
	for i, w := range s.run {
		if w != nil {
			out = append(out, w)
			s.run[i] = nil
		}
	}
	out = append(out, s.queue...)
	s.queue = nil
	clear(s.at)
	s.nbusy = 0
	return out
}
