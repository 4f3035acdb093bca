package core

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/messages"
)

func w(id string) *messages.Work { return &messages.Work{WorkId: id, JobType: "echo"} }

func TestSlots(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T, s *slots)
	}{
		{name: "OfferFillsFreeSlotsThenQueues", run: func(t *testing.T, s *slots) {
			r, i := s.offer(w("a"))
			require.Equal(t, offerStart, r)
			require.Equal(t, 0, i)
			r, i = s.offer(w("b"))
			require.Equal(t, offerStart, r)
			require.Equal(t, 1, i)
			require.Equal(t, 0, s.capacity(0))
			r, _ = s.offer(w("c"))
			require.Equal(t, offerQueued, r)
		}},
		{name: "DuplicateOffers", run: func(t *testing.T, s *slots) {
			s.offer(w("a"))
			r, _ := s.offer(w("a"))
			require.Equal(t, offerRunning, r)
			_, ok := s.complete(0, "a", []byte("1"))
			require.True(t, ok)
			r, _ = s.offer(w("a"))
			require.Equal(t, offerDone, r)
		}},
		{name: "CompleteStartsQueuedWork", run: func(t *testing.T, s *slots) {
			s.offer(w("a"))
			s.offer(w("b"))
			s.offer(w("c"))
			next, ok := s.complete(1, "b", nil)
			require.True(t, ok)
			require.Equal(t, "c", next.GetWorkId())
			require.Equal(t, "c", s.running(1).GetWorkId())
		}},
		{name: "StaleCompleteIsIgnored", run: func(t *testing.T, s *slots) {
			s.offer(w("a"))
			_, ok := s.complete(0, "zzz", nil)
			require.False(t, ok)
			_, ok = s.complete(1, "a", nil)
			require.False(t, ok)
			require.Equal(t, "a", s.running(0).GetWorkId())
		}},
		{name: "FailFreesTheSlot", run: func(t *testing.T, s *slots) {
			s.offer(w("a"))
			failed, next := s.fail(0, "")
			require.Equal(t, "a", failed.GetWorkId())
			require.Nil(t, next)
			require.Equal(t, 2, s.capacity(0))
			failed, _ = s.fail(0, "")
			require.Nil(t, failed, "a free slot has nothing to fail")
		}},
		{name: "UnackedResultsLimitCapacity", run: func(t *testing.T, s *slots) {
			for i := range 3 {
				id := fmt.Sprint(i)
				s.offer(w(id))
				_, ok := s.complete(0, id, nil)
				require.True(t, ok)
			}
			require.Equal(t, 0, s.capacity(0), "maxUnacked 3 reached")
			timer, ok := s.ack("1")
			require.True(t, ok)
			require.Equal(t, "resend:1", timer)
			_, ok = s.ack("1")
			require.False(t, ok)
			require.Equal(t, 1, s.capacity(0))
		}},
		{name: "DrainReturnsRunningAndQueued", run: func(t *testing.T, s *slots) {
			s.offer(w("a"))
			s.offer(w("b"))
			s.offer(w("c"))
			got := s.drain()
			require.Len(t, got, 3)
			require.Equal(t, 0, s.busy())
			require.Empty(t, s.queue)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newSlots(2, 3))
		})
	}
}

// FuzzSlots drives slots with random operations and checks them against a
// dumb model: every offered id is in exactly one place (running, queued,
// unacked, acked or failed), nothing runs twice, the queue is used only when
// every slot is busy, the index finds each id where it is, and capacity
// never goes negative or past the window and the read-ahead.
func FuzzSlots(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 3, 0, 4, 1, 1, 5})
	f.Add([]byte{3, 3, 3, 3, 0, 1, 0, 1, 0, 1, 2, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		window := 1 + len(ops)%4
		s := newSlots(window, 2*window+2)
		ahead := len(ops) % 3
		where := map[string]string{} // id -> "run" | "queue" | "unacked" | "acked" | "failed"
		next := 0
		for i, op := range ops {
			slot := int(op>>3) % window
			switch op % 7 {
			case 0, 5: // offer a new id (5: re-offer an old one)
				id := fmt.Sprint(next)
				if op%7 == 5 && next > 0 {
					id = fmt.Sprint(int(op) % next)
				}
				if _, known := where[id]; !known {
					next++
				}
				r, _ := s.offer(w(id))
				switch r {
				case offerStart:
					require.NotContains(t, []string{"run", "queue", "unacked"}, where[id], "op %d", i)
					where[id] = "run"
				case offerQueued:
					where[id] = "queue"
				case offerRunning:
					require.Contains(t, []string{"run", "queue"}, where[id])
				case offerDone:
					require.Equal(t, "unacked", where[id])
				}
			case 1: // complete the work of a slot
				if cur := s.running(slot); cur != nil {
					nx, ok := s.complete(slot, cur.GetWorkId(), nil)
					require.True(t, ok)
					where[cur.GetWorkId()] = "unacked"
					if nx != nil {
						require.Equal(t, "queue", where[nx.GetWorkId()])
						where[nx.GetWorkId()] = "run"
					}
				}
			case 2: // fail a slot
				failed, nx := s.fail(slot, "")
				if failed != nil {
					require.Equal(t, "run", where[failed.GetWorkId()])
					where[failed.GetWorkId()] = "failed"
				}
				if nx != nil {
					where[nx.GetWorkId()] = "run"
				}
			case 3: // ack the oldest unacked id
				for id, st := range where {
					if st == "unacked" {
						_, ok := s.ack(id)
						require.True(t, ok)
						where[id] = "acked"
						break
					}
				}
			case 4:
				for _, d := range s.drain() {
					where[d.GetWorkId()] = "failed"
				}
			case 6: // hand back the queue (a drain)
				for _, d := range s.takeQueue() {
					require.Equal(t, "queue", where[d.GetWorkId()])
					where[d.GetWorkId()] = "failed"
				}
			}
			// Invariants against the model.
			counts := map[string]int{}
			for _, st := range where {
				counts[st]++
			}
			require.Equal(t, counts["run"], s.busy())
			running := 0
			for _, r := range s.run {
				if r != nil {
					running++
				}
			}
			require.Equal(t, running, s.busy(), "the busy count drifted")
			for id, st := range where {
				at := s.find(id)
				switch st {
				case "run":
					require.GreaterOrEqual(t, at, 0, "id %s", id)
					require.Equal(t, id, s.running(at).GetWorkId())
				case "queue":
					require.Equal(t, -1, at, "id %s", id)
				default:
					require.Equal(t, -2, at, "id %s is %s", id, st)
				}
			}
			require.Equal(t, counts["queue"], len(s.queue))
			require.Equal(t, counts["unacked"], len(s.unacked))
			if len(s.queue) > 0 {
				require.Equal(t, window, s.busy(), "queue used while a slot is free")
			}
			c := s.capacity(ahead)
			require.GreaterOrEqual(t, c, 0)
			require.LessOrEqual(t, c, window+ahead)
		}
	})
}
