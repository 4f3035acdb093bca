/*
Package persistence is the event-sourcing layer of Foreman's durable actors:
the journal port (Journal, Event, Snapshot and their errors) and Runtime,
which gives one protoactor actor Akka-style persistence over it.

The journal backends (in-memory, SQLite, PostgreSQL) live in cluster/journal
and implement Journal; actors depend only on this package, so imports point
down.

# The contract

An actor keeps its decisions in a pure state type. For each command it
decides, applies the resulting events to that state, and calls
Runtime.Persist with a then callback for what others may see. The runtime:

  - recovers at Start: a new epoch (every older activation is fenced), the
    newest snapshot (Handler.Reset), the events after it (Handler.Replay),
    and a recovery marker for singletons (RecoveryMarker);
  - puts the events of every message handled while the previous append was
    being written into one group commit (one fsync);
  - runs then, Reply and Defer only once everything persisted before them is
    durable, in sequence order: no reply, hand-out or publish precedes its
    record;
  - never acts on a failed write: it drops its unconfirmed state and
    recovers from the journal; a fenced write stops the actor;
  - retries a recovery that fails (journal briefly down) with backoff on an
    injected clock; snapshots every N events (Handler.Snapshot may decline).

# Example

	type counter struct {
		rt *persistence.Runtime
		n  int64 // decision state
	}

	func (a *counter) Reset(s *persistence.Snapshot) error { a.n = 0; return nil }
	func (a *counter) Replay(persistence.Event) error      { a.n++; return nil }
	func (a *counter) Snapshot(int) (proto.Message, bool)  { return nil, false }

	func (a *counter) Receive(c actor.Context) {
		if a.rt.Handle(c) {
			return
		}
		switch c.Message().(type) {
		case *actor.Started:
			a.rt.Start(c, a, nil)
		case *Increment:
			if !a.rt.Recovered() {
				c.Respond(&Unavailable{})
				return
			}
			a.n++ // decided now, so the next message sees it
			a.rt.Persist([]proto.Message{&Incremented{}}, nil)
			a.rt.Reply(c.Sender(), &Count{N: a.n}) // leaves once durable
		}
	}

actors/master is the full example: its WorkState is the pure state, and the
master's shell only maps the distributed-workers protocol onto Persist,
Reply and Defer.
*/
package persistence
