package pulling

import (
	"context"
	"encoding/binary"
	"fmt"
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

// Positioned is an item of a [SeekEpic] with the Epic's cursor after it: a
// [SeekEpic.Seek] to that cursor continues with the next item.
type Positioned[T any] struct {
	Item   T
	Cursor []byte
}

// SeekEpic is an Epic a durable master can resume: it returns each item with
// the cursor after it, and seeks to a cursor. Cursors are opaque bytes
// journaled by the master (e.g. the last primary key of a page).
type SeekEpic[T any] interface {
	// Seek positions the Epic just after cursor; nil is the start.
	Seek(ctx context.Context, cursor []byte) error
	// NextAt returns up to limit further items, each with the cursor after
	// it. An empty batch (and nil error) means the Epic has no more items.
	NextAt(ctx context.Context, limit int) ([]Positioned[T], error)
}

// EpicOpener opens the Epic called name, on whichever node hosts its durable
// master (see [DurableMasterProps]). The master calls it when the Epic
// begins and in every activation that resumes it, then seeks to the
// journaled position. An Epic that also implements [Sized] reports the
// items remaining after that Seek.
type EpicOpener[T any] func(ctx context.Context, name string) (SeekEpic[T], error)

// SliceSeekEpic returns a SeekEpic over items (not copied); its cursor is
// the index after an item, as 8 bytes. It implements [Sized].
func SliceSeekEpic[T any](items []T) SeekEpic[T] { return &sliceSeekEpic[T]{items: items} }

type sliceSeekEpic[T any] struct {
	mu    sync.Mutex // guards next
	items []T
	next  int
}

func (e *sliceSeekEpic[T]) Seek(_ context.Context, cursor []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cursor == nil {
		e.next = 0
		return nil
	}
	if len(cursor) != 8 {
		return fmt.Errorf("pulling: slice epic cursor of %d bytes, want 8", len(cursor))
	}
	n := binary.BigEndian.Uint64(cursor)
	if n > uint64(len(e.items)) {
		return fmt.Errorf("pulling: slice epic cursor %d beyond its %d items", n, len(e.items))
	}
	e.next = int(n)
	return nil
}

func (e *sliceSeekEpic[T]) NextAt(_ context.Context, limit int) ([]Positioned[T], error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := min(limit, len(e.items)-e.next)
	out := make([]Positioned[T], n)
	for i := range out {
		e.next++
		out[i] = Positioned[T]{Item: e.items[e.next-1], Cursor: binary.BigEndian.AppendUint64(nil, uint64(e.next))}
	}
	return out, nil
}

func (e *sliceSeekEpic[T]) Remaining() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.items) - e.next
}
