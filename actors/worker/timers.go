package worker

import (
	"time"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/worker/core"
)

// fired is a timer's or a Yield's firing, which the worker sends itself;
// gen ties it to the timer it came from (0: a Yield).
type fired struct {
	name string
	gen  uint64
}

// timerSet carries out the core's named timers (effect.Timer, StopTimer) on
// a clock. A firing reaches the core only while its timer is still the one
// armed under its name: one stopped or replaced meanwhile is dropped.
type timerSet struct {
	clock clock.Clock
	send  func(*fired) // to the worker's mailbox
	armed map[string]timerRef
	gen   uint64
}

type timerRef struct {
	t   clock.Timer
	gen uint64
}

// arm makes name fire after d, replacing a timer of that name.
func (s *timerSet) arm(name string, d time.Duration) {
	s.stop(name)
	s.gen++
	gen, send := s.gen, s.send
	s.armed[name] = timerRef{t: s.clock.AfterFunc(d, func() { send(&fired{name: name, gen: gen}) }), gen: gen}
}

// stop disarms name, if armed.
func (s *timerSet) stop(name string) {
	if t, ok := s.armed[name]; ok {
		t.t.Stop()
		delete(s.armed, name)
	}
}

// due reports whether m goes to the core: a Yield, or the firing of the
// timer still armed under its name (which is then spent).
func (s *timerSet) due(m *fired) bool {
	if m.gen == 0 {
		return true
	}
	if t, ok := s.armed[m.name]; !ok || t.gen != m.gen {
		return false
	}
	delete(s.armed, m.name)
	return true
}

// stopAll disarms every timer (the worker stopped).
func (s *timerSet) stopAll() {
	for name := range s.armed {
		s.stop(name)
	}
}

// The Yields' messages, made once (a message is never changed).
var yieldFlush, yieldDrain = &fired{name: core.YieldFlush}, &fired{name: core.YieldDrain}

// yieldOf returns the message of the Yield name.
func yieldOf(name string) *fired {
	switch name {
	case core.YieldFlush:
		return yieldFlush
	case core.YieldDrain:
		return yieldDrain
	}
	return &fired{name: name}
}
