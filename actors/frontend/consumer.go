package frontend

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"

	"github.com/foreman-actors/foreman/actors/frontend/core"
	"github.com/foreman-actors/foreman/messages"
)

// GetStats asks a WorkResultConsumer for its counters; it answers Stats.
type GetStats struct{}

// Stats are a WorkResultConsumer's counters: Consumed counts results
// consumed (the first of each outcome while deduplicating: a work id that
// ended, was re-submitted and ended again has two outcomes), Duplicates
// those whose outcome was already consumed.
type Stats = core.Stats

// ConsumerProps returns the props of the WorkResultConsumer: it subscribes
// to *messages.WorkResult on the actor system's EventStream (unless
// WithoutEventStream) and also consumes results sent to its PID, logs
// "Consumed result" for each (at WithResultLogLevel), calls WithOnResult, and counts duplicates
// (WithDedupe): a result is a duplicate when the same outcome of its work
// id was consumed, where an outcome is the final status and, on the feed,
// the position of the finishing event, so that a work that died, was
// re-submitted and completed is consumed twice, once per end. It answers GetStats with Stats. With WithFeed it
// reads the durable result feed (every completed, dead or cancelled work,
// at least once across restarts and failovers) instead of relying on
// pub-sub, which may lose results.
func ConsumerProps(opts ...Option) (*actor.Props, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return actor.PropsFromProducer(func() actor.Actor { return &consumer{cfg: cfg} }), nil
}

type consumer struct {
	cfg  config
	log  *slog.Logger
	sys  *actor.ActorSystem
	sub  *eventstream.Subscription
	core *core.Consumer // decides what is consumed and what is a duplicate

	stopFeed context.CancelFunc // WithFeed: ends the reader
	feedDone chan struct{}      // closed when the reader ended
}

// Receive handles results, GetStats and lifecycle messages.
func (r *consumer) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		r.log = r.cfg.logger
		if r.log == nil {
			r.log = c.Logger()
		}
		r.log = r.log.With("component", "result_consumer")
		r.core = core.NewConsumer(core.ConsumerConfig{Window: r.cfg.dedupe})
		if r.cfg.feedClient != nil {
			r.startFeed(c)
		}
		if !r.cfg.noStream {
			sys, self := c.ActorSystem(), c.Self()
			r.sys = sys
			// Filter in the handler: protoactor's SubscribeWithPredicate
			// sets the predicate after publishing the subscription, a data
			// race with a concurrent Publish.
			r.sub = sys.EventStream.Subscribe(func(evt any) {
				if _, ok := evt.(*messages.WorkResult); ok {
					sys.Root.Send(self, evt)
				}
			})
		}
	case *messages.WorkResult:
		r.consume(m, 0)
	case *feedBatch:
		r.consumeBatch(m)
	case *GetStats:
		c.Respond(r.core.Stats())
	case GetStats:
		c.Respond(r.core.Stats())
	case *actor.Stopping:
		if r.stopFeed != nil {
			r.stopFeed()
			<-r.feedDone
		}
		if r.sub != nil {
			r.sys.EventStream.Unsubscribe(r.sub)
			r.sub = nil
		}
	}
}

// consume consumes a result; seq is the position of its finishing event in
// the result feed (0: not from the feed).
func (r *consumer) consume(m *messages.WorkResult, seq int64) {
	if !r.core.Consume(m, seq) {
		r.log.Info("Duplicate result", "work_id", m.GetWorkId(), "result", string(m.GetResult()))
		if r.cfg.onDuplicate != nil {
			r.cfg.onDuplicate(m)
		}
		return
	}
	if r.log.Enabled(context.Background(), r.cfg.resultLevel) {
		// Checked first: the arguments (a copy of the result, boxed
		// values) cost an allocation each for every result otherwise.
		r.log.Log(context.Background(), r.cfg.resultLevel, "Consumed result", "work_id", m.GetWorkId(), "job_type", m.GetJobType(), "result", string(m.GetResult()))
	}
	if r.cfg.onResult != nil {
		r.cfg.onResult(m)
	}
}
