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
