// Package effect is the vocabulary that the protocol's pure cores answer
// in. A core (the master's, the worker's, the frontend's, the waiter's, the
// membership view's) is a value whose Step takes the time and one input and
// returns effects; it never blocks, reads a clock, starts a goroutine or
// sends anything itself. An actor shell carries the effects out with
// protoactor and the journal; the simulator (actors/sim) carries them out
// on virtual time, with faults. Because both run the same core, what the
// simulator finds is a bug of the code that runs in production.
//
// Effects are carried out in the order they are returned.
package effect

import (
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// Effect is one thing a core asks its runner to do: one of the types in
// this package, or a type of the core's own for what only it needs.
type Effect interface{ IsEffect() }

// Send delivers Msg to To with the core's own address as the sender, at
// most once and in no guaranteed order relative to other senders (the
// network may drop it; the core's protocol retries where it must).
type Send struct {
	To  *messages.PID
	Msg proto.Message
}

// Reply answers the sender of a request. With AfterDurable it leaves only
// once every Append returned before it is durable: an answer never shows
// what a crash could undo (persist before effect).
type Reply struct {
	To           *messages.PID
	Msg          proto.Message
	AfterDurable bool
}

// Append writes Events to the core's journal stream, after every earlier
// Append and in one group commit with any that are pending. Once they are
// durable the runner steps the core with Durable{Token}; if the write
// fails the runner recovers the core from the journal instead.
type Append struct {
	Events []proto.Message
	Token  uint64
}

// Timer arms the timer Name to fire at At, replacing one of that name; the
// runner then steps the core with Fired{Name}. A timer that fires after it
// was replaced or stopped may still arrive: cores tie a generation to what
// they arm when that matters.
type Timer struct {
	Name string
	At   time.Time
}

// StopTimer disarms the timer Name, if armed.
type StopTimer struct {
	Name string
}

// Log is a line for the node's log, at Level, with Attrs as slog
// key-value pairs.
type Log struct {
	Level slog.Level
	Msg   string
	Attrs []any
}

// IsEffect marks the effect types; a core's own effect type defines it too.
func (Send) IsEffect() {}

// IsEffect marks Reply as an Effect.
func (Reply) IsEffect() {}

// IsEffect marks Append as an Effect.
func (Append) IsEffect() {}

// IsEffect marks Timer as an Effect.
func (Timer) IsEffect() {}

// IsEffect marks StopTimer as an Effect.
func (StopTimer) IsEffect() {}

// IsEffect marks Log as an Effect.
func (Log) IsEffect() {}

// Fired is the input a runner steps a core with when the timer Name fires.
type Fired struct {
	Name string
}

// Durable is the input a runner steps a core with once the Append with
// Token is durable.
type Durable struct {
	Token uint64
}
