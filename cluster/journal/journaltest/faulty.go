package journaltest

import (
	"context"
	"sync"

	"github.com/foreman-actors/foreman/cluster/journal"
)

// Faulty wraps a journal so a test can make its writes fail, to check that
// a persistent actor neither acknowledges nor loses work when the journal
// cannot write:
//
//	j := journaltest.NewFaulty(journal.NewMemory())
//	j.FailWrites(errors.New("disk full"))   // AcquireEpoch, Append, ... fail
//	j.FailWrites(nil)                       // healed
//
// Reads are never failed.
type Faulty struct {
	journal.Journal

	mu  sync.Mutex
	err error
}

var _ journal.Journal = (*Faulty)(nil)

// NewFaulty wraps j; writes pass through until FailWrites is called.
func NewFaulty(j journal.Journal) *Faulty { return &Faulty{Journal: j} }

// FailWrites makes every later write fail with err; nil lets them through
// again.
func (f *Faulty) FailWrites(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *Faulty) fault() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// AcquireEpoch implements journal.Journal.
func (f *Faulty) AcquireEpoch(ctx context.Context, stream string) (int64, int64, error) {
	if err := f.fault(); err != nil {
		return 0, 0, err
	}
	return f.Journal.AcquireEpoch(ctx, stream)
}

// Append implements journal.Journal.
func (f *Faulty) Append(ctx context.Context, stream string, epoch int64, events []journal.Event) error {
	if err := f.fault(); err != nil {
		return err
	}
	return f.Journal.Append(ctx, stream, epoch, events)
}

// AppendAsync implements journal.Journal. A failed call's done runs on a
// goroutine of its own, so it is not ordered with the wrapped journal's
// callbacks.
func (f *Faulty) AppendAsync(stream string, epoch int64, events []journal.Event, done func(error)) {
	if err := f.fault(); err != nil {
		go done(err)
		return
	}
	f.Journal.AppendAsync(stream, epoch, events, done)
}

// SaveSnapshot implements journal.Journal.
func (f *Faulty) SaveSnapshot(ctx context.Context, stream string, epoch int64, snap journal.Snapshot) error {
	if err := f.fault(); err != nil {
		return err
	}
	return f.Journal.SaveSnapshot(ctx, stream, epoch, snap)
}

// DeleteEvents implements journal.Journal.
func (f *Faulty) DeleteEvents(ctx context.Context, stream string, epoch int64, toSeq int64) error {
	if err := f.fault(); err != nil {
		return err
	}
	return f.Journal.DeleteEvents(ctx, stream, epoch, toSeq)
}
