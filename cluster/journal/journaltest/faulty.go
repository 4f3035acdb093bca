package journaltest

import (
	"context"
	"sync"
	"time"

	"github.com/foreman-actors/foreman/actors/persistence"
)

// Faulty wraps a journal so a test can make its writes fail, to check that
// a persistent actor neither acknowledges nor loses work when the journal
// cannot write:
//
//	j := journaltest.NewFaulty(journal.NewMemory())
//	j.FailWrites(errors.New("disk full"))   // AcquireEpoch, Append, ... fail
//	j.FailWrites(nil)                       // healed
//
// Reads are never failed. HoldWrites makes writes slow instead: they wait,
// in call order, until ReleaseWrites, so a test can look at what an actor
// does while its events are not yet durable (and, by taking the stream with
// another AcquireEpoch meanwhile, fence a batch in flight).
//
// Lease and ReleaseLease fail with the FailWrites error too (the journal is
// down), and FailLeases fails them alone: a lease holder that cannot renew
// while its appends still go through. Wrap one journal in a Faulty per
// activation to fail one activation's leases and not another's. Lease calls
// are never held.
type Faulty struct {
	persistence.Journal

	// order is held while released writes are handed on, so a write
	// made meanwhile cannot overtake them.
	order    sync.Mutex
	mu       sync.Mutex
	leaseErr error         // guarded by mu
	err      error         // guarded by mu
	held     []func()      // guarded by mu: writes waiting for ReleaseWrites, in call order
	holding  bool          // guarded by mu
	release  chan struct{} // guarded by mu: closed by ReleaseWrites
}

var _ persistence.Journal = (*Faulty)(nil)

// NewFaulty wraps j; writes pass through until FailWrites is called.
func NewFaulty(j persistence.Journal) *Faulty { return &Faulty{Journal: j} }

// FailWrites makes every later write fail with err; nil lets them through
// again.
func (f *Faulty) FailWrites(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// FailLeases makes every later Lease and ReleaseLease call fail with err
// (before it reaches the wrapped journal); nil lets them through again.
func (f *Faulty) FailLeases(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaseErr = err
}

// leaseFault returns the error a lease call fails with, if any.
func (f *Faulty) leaseFault() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leaseErr != nil {
		return f.leaseErr
	}
	return f.err
}

// Lease implements persistence.Journal.
func (f *Faulty) Lease(ctx context.Context, stream, holder string, ttl time.Duration) (persistence.LeaseState, error) {
	if err := f.leaseFault(); err != nil {
		return persistence.LeaseState{}, err
	}
	return f.Journal.Lease(ctx, stream, holder, ttl)
}

// ReleaseLease implements persistence.Journal.
func (f *Faulty) ReleaseLease(ctx context.Context, stream, holder string) error {
	if err := f.leaseFault(); err != nil {
		return err
	}
	return f.Journal.ReleaseLease(ctx, stream, holder)
}

// HoldWrites makes later writes wait until ReleaseWrites.
func (f *Faulty) HoldWrites() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.holding {
		f.holding, f.release = true, make(chan struct{})
	}
}

// ReleaseWrites lets the held writes through, in the order they were made,
// and stops holding. It returns the number of asynchronous appends released.
func (f *Faulty) ReleaseWrites() int {
	f.order.Lock()
	defer f.order.Unlock()
	f.mu.Lock()
	held := f.held
	f.held, f.holding = nil, false
	if f.release != nil {
		close(f.release)
		f.release = nil
	}
	f.mu.Unlock()
	for _, w := range held {
		w()
	}
	return len(held)
}

// passAsync hands an append on to the wrapped journal, after any released
// writes still being handed on.
func (f *Faulty) passAsync(stream string, epoch int64, events []persistence.Event, done func(error)) {
	f.order.Lock()
	defer f.order.Unlock()
	f.Journal.AppendAsync(stream, epoch, events, done)
}

// HeldWrites returns the number of asynchronous appends waiting.
func (f *Faulty) HeldWrites() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.held)
}

// fault returns the injected error, after waiting while writes are held
// (or until ctx ends).
func (f *Faulty) fault(ctx context.Context) error {
	f.mu.Lock()
	release := f.release
	f.mu.Unlock()
	if release != nil {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// AcquireEpoch implements persistence.Journal.
func (f *Faulty) AcquireEpoch(ctx context.Context, stream string) (int64, int64, error) {
	if err := f.fault(ctx); err != nil {
		return 0, 0, err
	}
	return f.Journal.AcquireEpoch(ctx, stream)
}

// Append implements persistence.Journal.
func (f *Faulty) Append(ctx context.Context, stream string, epoch int64, events []persistence.Event) error {
	if err := f.fault(ctx); err != nil {
		return err
	}
	return f.Journal.Append(ctx, stream, epoch, events)
}

// AppendAsync implements persistence.Journal. A failed call's done runs on a
// goroutine of its own, so it is not ordered with the wrapped journal's
// callbacks.
func (f *Faulty) AppendAsync(stream string, epoch int64, events []persistence.Event, done func(error)) {
	f.mu.Lock()
	if f.holding {
		f.held = append(f.held, func() { f.appendReleased(stream, epoch, events, done) })
		f.mu.Unlock()
		return
	}
	err := f.err
	f.mu.Unlock()
	if err != nil {
		go done(err)
		return
	}
	f.passAsync(stream, epoch, events, done)
}

// appendReleased hands on a released write (f.order is held by
// ReleaseWrites).
func (f *Faulty) appendReleased(stream string, epoch int64, events []persistence.Event, done func(error)) {
	f.mu.Lock()
	err := f.err
	f.mu.Unlock()
	if err != nil {
		go done(err)
		return
	}
	f.Journal.AppendAsync(stream, epoch, events, done)
}

// SaveSnapshot implements persistence.Journal.
func (f *Faulty) SaveSnapshot(ctx context.Context, stream string, epoch int64, snap persistence.Snapshot) error {
	if err := f.fault(ctx); err != nil {
		return err
	}
	return f.Journal.SaveSnapshot(ctx, stream, epoch, snap)
}

// DeleteEvents implements persistence.Journal.
func (f *Faulty) DeleteEvents(ctx context.Context, stream string, epoch int64, toSeq int64) error {
	if err := f.fault(ctx); err != nil {
		return err
	}
	return f.Journal.DeleteEvents(ctx, stream, epoch, toSeq)
}
