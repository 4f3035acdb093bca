package frontend

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	randv2 "math/rand/v2"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/messages"
)

// ProducerProps returns the props of the WorkProducer, the sample's
// simulated client: it sends Work to the Frontend actor at frontend and
// waits for Ok or NotOk. NotOk is retried after the retry delay (3 s) with
// the same id.
//
// In interval mode (the default) it produces one job, waits for its Ok,
// pauses a random 3-10 s (WithInterval) and produces the next, starting 5 s
// after it starts (WithInitialDelay). With WithJobs(n) it produces n jobs as
// fast as they are acknowledged, WithConcurrency at a time, then calls
// WithOnAllAcked. Payloads are n for the n-th job (WithPayload), the job
// type "square" (WithJobType).
func ProducerProps(frontend *actor.PID, opts ...Option) (*actor.Props, error) {
	if frontend == nil {
		return nil, wrapOpt("nil frontend PID")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &producer{cfg: cfg, frontend: frontend}
	}), nil
}

// Producer timer messages, sent to itself.
type (
	produceTick struct{ token uint64 }
	retryTick   struct {
		token  uint64
		workID string
	}
)

type producer struct {
	cfg      config
	frontend *actor.PID
	log      *slog.Logger
	sys      *actor.ActorSystem
	self     *actor.PID

	n           int                       // jobs produced
	acked       int                       // jobs acknowledged
	outstanding map[string]*messages.Work // sent, no Ok yet
	timers      map[uint64]clock.Timer
	token       uint64
	stopped     bool
}

// Receive handles ticks, Ok, NotOk and lifecycle messages.
func (p *producer) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		p.start(c)
	case *produceTick:
		delete(p.timers, m.token)
		p.fill(c)
	case *retryTick:
		delete(p.timers, m.token)
		if w, ok := p.outstanding[m.workID]; ok {
			c.Request(p.frontend, w)
		}
	case *Ok:
		p.onOk(c, m.WorkID)
	case *NotOk:
		if _, ok := p.outstanding[m.WorkID]; ok {
			p.log.Info("Work not accepted, retry after a while", "work_id", m.WorkID, "error", m.Err, "retry_in", p.cfg.retryDelay)
			p.after(p.cfg.retryDelay, func(tok uint64) any { return &retryTick{token: tok, workID: m.WorkID} })
		}
	case *actor.Stopping:
		p.stopped = true
		for _, t := range p.timers {
			t.Stop()
		}
	}
}

func (p *producer) start(c actor.Context) {
	p.sys, p.self = c.ActorSystem(), c.Self()
	p.log = p.cfg.logger
	if p.log == nil {
		p.log = c.Logger()
	}
	p.log = p.log.With("component", "work_producer")
	p.outstanding = make(map[string]*messages.Work)
	p.timers = make(map[uint64]clock.Timer)
	delay := DefaultInitialDelay
	if p.cfg.jobs > 0 {
		delay = 0
	}
	if p.cfg.initialDelay != nil {
		delay = *p.cfg.initialDelay
	}
	if delay == 0 {
		p.fill(c)
		return
	}
	p.after(delay, func(tok uint64) any { return &produceTick{token: tok} })
}

// fill produces jobs until the allowed number is outstanding.
func (p *producer) fill(c actor.Context) {
	limit := 1
	if p.cfg.jobs > 0 {
		limit = p.cfg.concurrency
	}
	for len(p.outstanding) < limit && (p.cfg.jobs == 0 || p.n < p.cfg.jobs) {
		p.n++
		id := ""
		if p.cfg.workID != nil {
			id = p.cfg.workID(p.n)
		} else {
			id = randomID()
		}
		w := &messages.Work{WorkId: id, JobType: p.cfg.jobType, Payload: p.cfg.payload(p.n)}
		p.outstanding[id] = w
		if p.cfg.jobs > 0 {
			p.log.Debug("Produced work", "n", p.n, "work_id", id)
		} else {
			p.log.Info("Produced work", "n", p.n, "work_id", id)
		}
		c.Request(p.frontend, w)
	}
}

func (p *producer) onOk(c actor.Context, id string) {
	w, ok := p.outstanding[id]
	if !ok {
		return // a late duplicate Ok
	}
	delete(p.outstanding, id)
	p.acked++
	if p.cfg.onAcked != nil {
		p.cfg.onAcked(w)
	}
	if p.cfg.jobs > 0 {
		if p.acked == p.cfg.jobs {
			p.log.Info("All work acknowledged", "jobs", p.acked)
			if p.cfg.onAllAcked != nil {
				p.cfg.onAllAcked()
			}
			return
		}
		p.fill(c)
		return
	}
	d := p.cfg.intervalMin
	if p.cfg.intervalMax > p.cfg.intervalMin {
		d += randv2.N(p.cfg.intervalMax - p.cfg.intervalMin + 1)
	}
	if d == 0 {
		p.fill(c)
		return
	}
	p.after(d, func(tok uint64) any { return &produceTick{token: tok} })
}

// after sends the message made by mk to the producer itself after d.
func (p *producer) after(d time.Duration, mk func(token uint64) any) {
	if p.stopped {
		return
	}
	p.token++
	tok := p.token
	msg := mk(tok)
	sys, self := p.sys, p.self
	p.timers[tok] = p.cfg.clock.AfterFunc(d, func() { sys.Root.Send(self, msg) })
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
