package persistence_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/testkit"
)

// slowSnapshots writes snapshots slowly, as a single-writer journal writes
// a 100 MB one: SaveSnapshot waits for release, and every Lease call made
// meanwhile queues behind it (until release or its caller gives up).
type slowSnapshots struct {
	persistence.Journal
	entered, release chan struct{}
	once             sync.Once

	mu     sync.Mutex
	saving bool
	ttls   []time.Duration // of every Lease call
}

func (s *slowSnapshots) SaveSnapshot(ctx context.Context, stream string, epoch int64, snap persistence.Snapshot) error {
	s.mu.Lock()
	s.saving = true
	s.mu.Unlock()
	s.once.Do(func() { close(s.entered) })
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	s.mu.Lock()
	s.saving = false
	s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Journal.SaveSnapshot(ctx, stream, epoch, snap)
}

func (s *slowSnapshots) Lease(ctx context.Context, stream, holder string, ttl time.Duration) (persistence.LeaseState, error) {
	s.mu.Lock()
	s.ttls = append(s.ttls, ttl)
	saving := s.saving
	s.mu.Unlock()
	if saving {
		select {
		case <-s.release:
		case <-ctx.Done():
			return persistence.LeaseState{}, ctx.Err()
		}
	}
	return s.Journal.Lease(ctx, stream, holder, ttl)
}

func (s *slowSnapshots) leasedFor(d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.ttls {
		if t == d {
			return true
		}
	}
	return false
}

// TestBigSnapshotKeepsTheLease: while a big snapshot is being written and
// the lease renewals queue behind it for more than the ttl, the runtime
// keeps serving, because it lengthened its lease to the journal timeout
// first; with the longer lease turned off, the same stall stops it.
func TestBigSnapshotKeepsTheLease(t *testing.T) {
	t.Parallel()
	const journalTimeout = 5 * time.Second
	for _, tc := range []struct {
		name       string
		big        int
		keepsGoing bool
	}{
		{name: "Lengthened", big: 1, keepsGoing: true},
		{name: "Off", big: 0, keepsGoing: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			j := &slowSnapshots{Journal: b.faulty, entered: make(chan struct{}), release: make(chan struct{})}
			t.Cleanup(func() { j.once.Do(func() {}); closeOnce(j.release) })
			rt, err := persistence.New(j, stream, append(b.opts, persistence.WithLease(ttl), persistence.WithSnapshotEvery(1),
				persistence.WithBigSnapshotLease(tc.big), persistence.WithJournalTimeout(journalTimeout))...)
			require.NoError(t, err)
			a := &setActor{rt: rt, track: b.track, violations: &b.violations, recovered: b.events.PID(), resets: &b.resets}
			pid := b.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
			b.events.ExpectMsg(wrapperspb.String("recovered"), testkit.Timeout())
			b.client.Watch(pid)

			b.add(pid, "a") // its commit triggers a snapshot, which stalls
			b.client.ExpectMsg(wrapperspb.Int64(1), testkit.Timeout())
			select {
			case <-j.entered:
			case <-time.After(testkit.Timeout()):
				t.Fatal("no snapshot was written")
			}
			require.Equal(t, tc.keepsGoing, j.leasedFor(journalTimeout), "lease lengthened before the snapshot")

			// A second of the runtime's time in small steps: three ttls, and
			// more than the deadline plus the last chance.
			for range 10 {
				b.clk.Advance(step)
				time.Sleep(20 * time.Millisecond)
			}
			if !tc.keepsGoing {
				// It decided to stop; the stop waits for the write.
				closeOnce(j.release)
				b.client.ExpectTerminated(pid, testkit.Timeout())
				return
			}
			require.Equal(t, "running", b.phase(t, pid))
			closeOnce(j.release)
			b.add(pid, "b")
			b.client.ExpectMsg(wrapperspb.Int64(2), testkit.Timeout())
			b.client.ExpectNoMsg(50 * time.Millisecond) // not terminated
		})
	}
}

// closeOnce closes ch unless it is closed already.
func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}
