package metrics

import (
	"fmt"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
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

// MeterProvider returns the OpenTelemetry MeterProvider that exports into
// this registry, with seconds buckets for protoactor's receive time; made
// on the first call, the same one after. The library never installs it as
// OpenTelemetry's process-wide provider: that is the application's choice
// (see ActorSystemOption).
func (m *Metrics) MeterProvider() (*sdkmetric.MeterProvider, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.meterProvider != nil {
		return m.meterProvider, nil
	}
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
	m.meterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithView(receive))
	return m.meterProvider, nil
}

// ActorSystemOption returns the actor-system option that turns on
// protoactor's own actor metrics (receive time, spawns, stops, restarts,
// failures, dead letters, futures), with this registry's MeterProvider.
//
// It does not touch OpenTelemetry's process-wide MeterProvider. The pinned
// protoactor makes its instruments with the global meter
// (otel.Meter), whatever provider it is given, so its series reach this
// registry only when the application installs this registry's provider as
// the global one (otel.SetMeterProvider(m.MeterProvider())), as the
// foreman binary does for --actor-metrics. An application with its own
// global provider gets protoactor's instruments there instead.
func (m *Metrics) ActorSystemOption() (actor.ConfigOption, error) {
	provider, err := m.MeterProvider()
	if err != nil {
		return nil, err
	}
	return actor.WithMetricProviders(provider), nil
}
