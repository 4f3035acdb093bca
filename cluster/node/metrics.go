package node

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/metrics"
)

// WithMetrics feeds m from the node: its master's durable facts, its
// journal's group commits and the mailboxes of its master and workers.
func WithMetrics(m *metrics.Metrics) LocalOption { return func(c *localConfig) { c.metrics = m } }

// WithActorMetrics also exports protoactor's own actor metrics into the
// WithMetrics registry (see metrics.Metrics.ActorSystemOption). It applies to
// the actor system the node makes, not to one given with WithActorSystem.
func WithActorMetrics() LocalOption { return func(c *localConfig) { c.actorMetrics = true } }

// metricsJournal returns the journal options that report group commits to m.
func metricsJournal(m *metrics.Metrics) []journal.Option {
	if m == nil {
		return nil
	}
	return []journal.Option{journal.WithCommitObserver(m.CommitObserver())}
}

// metricsMaster returns the master options that report to m.
func metricsMaster(m *metrics.Metrics) []master.Option {
	if m == nil {
		return nil
	}
	return []master.Option{master.WithObserver(m.MasterObserver())}
}

// metricsMailbox counts the mailboxes of props' actors as kind in m.
func metricsMailbox(props *actor.Props, m *metrics.Metrics, kind string) *actor.Props {
	if m == nil {
		return props
	}
	return props.Configure(m.Mailbox(kind))
}

// metricsSystem returns the actor-system options for protoactor's metrics.
func metricsSystem(m *metrics.Metrics, on bool) ([]actor.ConfigOption, error) {
	if m == nil || !on {
		return nil, nil
	}
	opt, err := m.ActorSystemOption()
	if err != nil {
		return nil, err
	}
	return []actor.ConfigOption{opt}, nil
}
