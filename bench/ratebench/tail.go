package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// tail reads the hand-outs of every shard's stream while the run goes on:
// a master's snapshot deletes the events it covers, so reading only at the
// end would miss the first ones.
type tail struct {
	j       *journal.SQLite
	streams []string
	next    []int64

	mu     sync.Mutex
	starts []time.Time
	missed int64 // events deleted before they were read
	grew   chan struct{}
}

func openTail(path string, shards int) (*tail, error) {
	j, err := journal.OpenSQLite(path)
	if err != nil {
		return nil, fmt.Errorf("opening the journal to read hand-outs: %w", err)
	}
	t := &tail{j: j, grew: make(chan struct{})}
	for k := range shards {
		t.streams = append(t.streams, route.ShardName(master.DefaultStream, k, shards))
		t.next = append(t.next, 1)
	}
	return t, nil
}

func (t *tail) close() error { return t.j.Close() }

var startTypes = []protoreflect.FullName{
	(&messages.WorkStarted{}).ProtoReflect().Descriptor().FullName(),
	(&messages.WorksStarted{}).ProtoReflect().Descriptor().FullName(),
}

// poll reads each stream from where the last poll stopped.
func (t *tail) poll(ctx context.Context) error {
	var found []time.Time
	var missed int64
	for i, s := range t.streams {
		err := t.j.LoadTypes(ctx, s, t.next[i], startTypes, func(ev persistence.Event) error {
			if ev.Seq > t.next[i] {
				missed += ev.Seq - t.next[i]
			}
			t.next[i] = ev.Seq + 1
			switch m := ev.Msg.(type) {
			case *messages.WorkStarted:
				found = append(found, time.Unix(0, m.GetAtUnixNano()))
			case *messages.WorksStarted:
				for range m.GetWorkIds() {
					found = append(found, time.Unix(0, m.GetAtUnixNano()))
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading %s: %w", s, err)
		}
	}
	t.mu.Lock()
	t.starts = append(t.starts, found...)
	t.missed += missed
	if len(found) > 0 {
		close(t.grew)
		t.grew = make(chan struct{})
	}
	t.mu.Unlock()
	return nil
}

// follow polls every interval until ctx ends.
func (t *tail) follow(ctx context.Context, every time.Duration) error {
	for {
		if err := t.poll(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// waitCount waits until at least n hand-outs were read and returns the
// earliest.
func (t *tail) waitCount(ctx context.Context, n int, d time.Duration) (time.Time, error) {
	deadline := time.After(d)
	for {
		t.mu.Lock()
		have, grew := len(t.starts), t.grew
		var first time.Time
		if have >= n {
			first = slices.MinFunc(t.starts, func(a, b time.Time) int { return a.Compare(b) })
		}
		t.mu.Unlock()
		if have >= n {
			return first, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-deadline:
			return time.Time{}, fmt.Errorf("only %d of %d hand-outs in the journal after %v", have, n, d)
		case <-grew:
		}
	}
}

// sorted returns the hand-out times read so far, in order.
func (t *tail) sorted() []time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	ts := slices.Clone(t.starts)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	return ts
}
