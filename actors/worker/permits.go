package worker

import (
	"sync"

	"github.com/foreman-actors/foreman/actors/adaptive"
)

// permitBox hands permits from the acquiring goroutine to the worker so that
// none is lost when the worker stops or restarts: a permit put after close
// is abandoned by its goroutine, and close returns the permits that were put
// but not yet taken, for the worker to abandon.
type permitBox struct {
	mu      sync.Mutex                    // guards pending and closed
	pending map[*adaptive.Permit]struct{} // guarded by mu
	closed  bool                          // guarded by mu
}

func newPermitBox() *permitBox {
	return &permitBox{pending: make(map[*adaptive.Permit]struct{})}
}

// put records p as on its way to the worker; false once the box is closed.
func (b *permitBox) put(p *adaptive.Permit) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.pending[p] = struct{}{}
	return true
}

// take claims p for the worker; false when close claimed it first.
func (b *permitBox) take(p *adaptive.Permit) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.pending[p]
	delete(b.pending, p)
	return ok
}

// close refuses further puts and returns the permits not yet taken.
func (b *permitBox) close() []*adaptive.Permit {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	out := make([]*adaptive.Permit, 0, len(b.pending))
	for p := range b.pending {
		out = append(out, p)
	}
	clear(b.pending)
	return out
}

// permitSet holds the permits the core names by id (PermitGranted, Release,
// Abandon).
type permitSet struct {
	held map[uint64]*adaptive.Permit
	seq  uint64
}

// name returns the id the core knows p by.
func (s *permitSet) name(p *adaptive.Permit) uint64 {
	s.seq++
	s.held[s.seq] = p
	return s.seq
}

// end gives back the permit named id: released with the job's timing when
// its job ran, else abandoned (teaching the limiter nothing).
func (s *permitSet) end(id uint64, ran bool) {
	p, ok := s.held[id]
	if !ok {
		return
	}
	delete(s.held, id)
	if ran {
		p.Release()
	} else {
		p.Abandon()
	}
}
