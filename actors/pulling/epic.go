package pulling

import (
	"context"
	"sync"
)

// Epic is a lazy, possibly huge source of work: the seed's dao.findWorkBatch.
// The master calls Next in its own goroutine whenever its buffer runs low,
// never concurrently with itself, and cancels ctx when it stops.
type Epic[T any] interface {
	// Next returns up to limit further items. An empty batch (and nil error)
	// means the Epic has no more items. An error is retried a few times
	// before the Epic is aborted.
	Next(ctx context.Context, limit int) ([]T, error)
}

// Sized is optionally implemented by an Epic that knows how many items it
// holds. The master reads it once, when the Epic starts, to report the
// items remaining in [Stats].
type Sized interface {
	// Remaining returns how many items the Epic will still return.
	Remaining() int
}

// EpicFunc adapts a function to [Epic].
type EpicFunc[T any] func(ctx context.Context, limit int) ([]T, error)

// Next calls f.
func (f EpicFunc[T]) Next(ctx context.Context, limit int) ([]T, error) { return f(ctx, limit) }

// SliceEpic returns an Epic over items, which it does not copy. It implements
// [Sized].
func SliceEpic[T any](items []T) Epic[T] { return &sliceEpic[T]{items: items} }

type sliceEpic[T any] struct {
	mu    sync.Mutex // guards items
	items []T
}

func (e *sliceEpic[T]) Next(_ context.Context, limit int) ([]T, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := min(limit, len(e.items))
	batch := e.items[:n:n]
	e.items = e.items[n:]
	return batch, nil
}

func (e *sliceEpic[T]) Remaining() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.items)
}
