package metrics

import (
	"fmt"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Actor kinds of the mailbox gauge.
const (
	ActorMaster   = "master"
	ActorWorker   = "worker"
	ActorFrontend = "frontend"
)

// mailboxStats is protoactor's MailboxMiddleware for all mailboxes of one
// actor kind on this node: posted minus received is what waits. The pinned
// protoactor never emits its own mailbox-length instrument (its per-spawn
// callback does not report), so Foreman counts for itself.
type mailboxStats struct{ waiting atomic.Int64 }

var _ actor.MailboxMiddleware = (*mailboxStats)(nil)

func (s *mailboxStats) MailboxStarted()     {}
func (s *mailboxStats) MessagePosted(any)   { s.waiting.Add(1) }
func (s *mailboxStats) MessageReceived(any) { s.waiting.Add(-1) }
func (s *mailboxStats) MailboxEmpty()       {}
func (s *mailboxStats) value() float64      { return float64(max(s.waiting.Load(), 0)) }
func (m *Metrics) mailboxOf(kind string) *mailboxStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.mailboxes[kind]
	if s == nil {
		s = &mailboxStats{}
		m.mailboxes[kind] = s
	}
	return s
}

// Mailbox returns a props option that gives an actor an unbounded mailbox
// (protoactor's default) counted in foreman_actor_mailbox_messages{actor=kind}.
// Use it on long-lived actors only: messages left in the mailbox of an
// actor that stopped stay counted.
func (m *Metrics) Mailbox(kind string) actor.PropsOption {
	return actor.WithMailbox(actor.Unbounded(m.mailboxOf(kind)))
}

// ActorSystemOption returns the actor-system option that turns on
// protoactor's own actor metrics (receive time, spawns, stops, restarts,
// failures, dead letters, futures) and exports them into this registry,
// with seconds buckets for the receive time. protoactor records
// its instruments through OpenTelemetry's process-wide provider, which this
// sets: use it for one actor system per process (the last call wins).
func (m *Metrics) ActorSystemOption() (actor.ConfigOption, error) {
	exp, err := otelprom.New(otelprom.WithRegisterer(m.reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: OpenTelemetry exporter: %w", err)
	}
	receive := sdkmetric.NewView(
		sdkmetric.Instrument{Name: "protoactor_actor_message_receive_duration_seconds"},
		sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{
			Boundaries: []float64{0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1},
		}},
	)
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithView(receive))
	// protoactor only checks that a provider was given; it makes its
	// instruments with OpenTelemetry's global meter, so the global
	// provider must be ours (protoactor's own :2222 provider sets it too).
	otel.SetMeterProvider(provider)
	return actor.WithMetricProviders(provider), nil
}
