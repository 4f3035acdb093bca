// The package documentation is in doc.go.

package persistence

import (
	"context"
	"errors"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Sentinel errors callers branch on.
var (
	// ErrFenced means another writer acquired the stream after this one: the
	// caller lost its place and must stop writing (a master stops itself).
	ErrFenced = errors.New("persistence: fenced by a newer writer")
	// ErrConflict means the sequence numbers of an append do not follow the
	// last stored event of the stream (duplicate or gap).
	ErrConflict = errors.New("persistence: sequence conflict")
	// ErrClosed is returned by calls on a closed journal.
	ErrClosed = errors.New("persistence: closed")
	// ErrInvalid means the call's arguments can never be stored (empty
	// stream name, nil message, negative sequence number).
	ErrInvalid = errors.New("persistence: invalid argument")
	// ErrUnknownType means a stored message's protobuf type is not linked
	// into the program, so it cannot be decoded.
	ErrUnknownType = errors.New("persistence: unknown message type")
	// ErrInvalidOption means a Runtime option is out of range.
	ErrInvalidOption = errors.New("persistence: invalid option")
	// ErrRecovery means the journal's contents cannot be replayed (a gap in
	// the sequence numbers, a snapshot the handler cannot restore).
	ErrRecovery = errors.New("persistence: recovery failed")
	// ErrLeaseHeld means another holder's lease on the stream is live: the
	// caller must wait for it to lapse or be released (Journal.Lease
	// returns who holds it and for how long).
	ErrLeaseHeld = errors.New("persistence: lease held by another holder")
)

// Event is one journaled event with its sequence number in the stream.
// Sequence numbers start at 1 and are contiguous.
type Event struct {
	Seq int64
	Msg proto.Message
}

// Snapshot is a stored snapshot: the state after the event numbered Seq.
type Snapshot struct {
	Seq int64
	Msg proto.Message
}

// LeaseState is a stream's lease as Journal.Lease found or left it.
type LeaseState struct {
	// Holder is the holder the lease belongs to: the caller when the lease
	// was granted, the other holder when it was refused.
	Holder string
	// Remaining is how long the lease stays live from the call, on the
	// journal's clock: the ttl asked for when granted, the other holder's
	// time left when refused.
	Remaining time.Duration
}

// TypedLoader is implemented by a Journal that can leave events of other
// types undecoded: LoadTypes is Load, except that an event whose message type
// is not among types reaches fn with a nil Msg (its Seq still shows it is
// there). A reader that wants a few kinds of event from a long stretch, such
// as a result feed, skips decoding the rest.
type TypedLoader interface {
	LoadTypes(ctx context.Context, stream string, fromSeq int64, types []protoreflect.FullName, fn func(Event) error) error
}

// Journal stores event streams. Implementations are safe for concurrent use.
//
// Messages are stored with their protobuf full name and decoded through the
// global protobuf registry, so every event and snapshot type must be a
// generated message linked into the program.
type Journal interface {
	// AcquireEpoch makes the caller the only writer of stream: it returns a
	// new epoch, greater than any earlier one, and the sequence number of
	// the last stored event (0 for an empty stream). Appends carrying an
	// older epoch fail with ErrFenced from then on.
	AcquireEpoch(ctx context.Context, stream string) (epoch, lastSeq int64, err error)

	// Append durably stores events (fsync on) for stream. events[0].Seq must
	// be the last stored sequence number plus one and the rest contiguous,
	// else ErrConflict; an epoch that is no longer current gives ErrFenced.
	// Concurrent appends are group-committed: those that arrive while a
	// transaction is being written go into the next one, and each call
	// returns once its own batch is committed.
	Append(ctx context.Context, stream string, epoch int64, events []Event) error

	// AppendAsync is Append without waiting: the append is queued in call
	// order (so one goroutine's appends are written in the order made) and
	// done is called, from another goroutine, with the outcome once its
	// batch is committed or has failed. done is always called exactly once.
	// The callbacks of one journal run one at a time, in call order, on a
	// goroutine of the journal: they must not block for long nor call Close.
	AppendAsync(stream string, epoch int64, events []Event, done func(error))

	// Load calls fn for each stored event of stream with Seq >= fromSeq, in
	// order. An error from fn stops the load and is returned.
	Load(ctx context.Context, stream string, fromSeq int64, fn func(Event) error) error

	// SaveSnapshot stores a snapshot of stream's state after event seq. The
	// epoch fences it like an append.
	SaveSnapshot(ctx context.Context, stream string, epoch int64, snap Snapshot) error

	// LoadSnapshot returns the newest snapshot of stream; ok is false when
	// there is none.
	LoadSnapshot(ctx context.Context, stream string) (snap Snapshot, ok bool, err error)

	// DeleteEvents removes the events of stream with Seq <= toSeq, once a
	// snapshot covers them. The last sequence number stays known, so
	// AcquireEpoch and Append behave as before.
	DeleteEvents(ctx context.Context, stream string, epoch int64, toSeq int64) error

	// Lease makes holder the lease holder of stream for ttl, measured on the
	// journal's clock, when the lease is free, has lapsed or is already
	// holder's (a renewal: the lease then runs ttl from this call). When
	// another holder's lease is live it changes nothing and returns that
	// holder's LeaseState with an error wrapping ErrLeaseHeld. An empty
	// stream or holder, or ttl <= 0, gives ErrInvalid.
	//
	// The lease arbitrates which activation of a stream serves, so that two
	// activations that cannot see each other but both reach the journal do
	// not take turns fencing each other. It is advisory: writes do not
	// check it, and the epoch stays the fence that keeps the journal
	// consistent. Each backend documents its clock (the process's, or the
	// database server's so that hosts' clock skew does not matter); a
	// holder should stop acting on a lease once ttl, less a margin for the
	// clocks' rates, has passed on its own clock since it sent the call
	// that granted it, which is then never later than the journal lets the
	// lease lapse; it must not count a renewal answered after that moment
	// as continuing the lease (another may have held it in between). The
	// Runtime does both (WithLease).
	Lease(ctx context.Context, stream, holder string, ttl time.Duration) (LeaseState, error)

	// ReleaseLease ends holder's lease on stream at once, so another holder
	// can take it without waiting for it to lapse. It returns nil when
	// holder does not hold the lease (it lapsed, or another took it). An
	// empty stream or holder gives ErrInvalid.
	ReleaseLease(ctx context.Context, stream, holder string) error

	// Close waits for queued appends to finish and releases the journal.
	// Calls after Close fail with ErrClosed.
	Close() error
}
