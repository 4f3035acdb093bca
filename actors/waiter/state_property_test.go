package waiter

import (
	"fmt"
	"testing"
	"testing/quick"
)

// checkQueue drives a Queue with the operations encoded in ops and compares
// it with a dumb model (a slice scanned from the front or the back). Every
// byte is one operation: even = submit, odd = a running job finishes.
func checkQueue(limit, maxBacklog int, order Order, ops []byte) error {
	q := NewQueue[int](limit, maxBacklog, order)
	var model []int
	running := 0
	next := 0
	for i, op := range ops {
		if op%2 == 0 {
			next++
			want := AdmitStart
			switch {
			case running < limit:
				running++
			case maxBacklog > 0 && len(model) >= maxBacklog:
				want = AdmitRejected
			default:
				model = append(model, next)
				want = AdmitQueued
			}
			if got := q.Submit(next); got != want {
				return fmt.Errorf("op %d: Submit(%d) = %v, model says %v", i, next, got, want)
			}
		} else {
			if running == 0 {
				continue
			}
			running--
			wantJob, wantOK := 0, false
			if len(model) > 0 {
				running++
				wantOK = true
				if order == FIFO {
					wantJob, model = model[0], model[1:]
				} else {
					wantJob, model = model[len(model)-1], model[:len(model)-1]
				}
			}
			got, ok := q.Done()
			if got != wantJob || ok != wantOK {
				return fmt.Errorf("op %d: Done() = (%d, %v), model says (%d, %v)", i, got, ok, wantJob, wantOK)
			}
		}
		if q.Running() != running || q.Backlog() != len(model) {
			return fmt.Errorf("op %d: running %d backlog %d, model says %d and %d", i, q.Running(), q.Backlog(), running, len(model))
		}
		if q.Running() > limit {
			return fmt.Errorf("op %d: %d running over the limit %d", i, q.Running(), limit)
		}
		if q.Backlog() > 0 && q.Running() < limit {
			return fmt.Errorf("op %d: %d jobs queued while a slot is free", i, q.Backlog())
		}
		if maxBacklog > 0 && q.Backlog() > maxBacklog {
			return fmt.Errorf("op %d: backlog %d over its bound %d", i, q.Backlog(), maxBacklog)
		}
	}
	drained := q.Drain()
	if order == LIFO {
		for i, j := 0, len(model)-1; i < j; i, j = i+1, j-1 {
			model[i], model[j] = model[j], model[i]
		}
	}
	if fmt.Sprint(drained) != fmt.Sprint(model) && len(model)+len(drained) > 0 {
		return fmt.Errorf("Drain() = %v, model says %v", drained, model)
	}
	return nil
}

func TestQueueMatchesModel(t *testing.T) {
	t.Parallel()
	f := func(limit, backlog uint8, lifo bool, ops []byte) bool {
		order := FIFO
		if lifo {
			order = LIFO
		}
		if err := checkQueue(int(limit%4)+1, int(backlog%4), order, ops); err != nil {
			t.Log(err)
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Fatal(err)
	}
}

func FuzzQueue(f *testing.F) {
	f.Add(uint8(1), uint8(0), false, []byte{0, 0, 0, 1, 1, 1})
	f.Add(uint8(2), uint8(1), true, []byte{0, 0, 0, 0, 1, 0, 1, 1, 1})
	f.Fuzz(func(t *testing.T, limit, backlog uint8, lifo bool, ops []byte) {
		order := FIFO
		if lifo {
			order = LIFO
		}
		if err := checkQueue(int(limit%8)+1, int(backlog%8), order, ops); err != nil {
			t.Fatal(err)
		}
	})
}
