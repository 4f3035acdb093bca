package node

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
)

// TestCheckShards: the journal records N when a sharded cluster first
// starts on it; a node with another N refuses, naming both; an unsharded
// node writes nothing, and a journal its master wrote counts as N=1.
func TestCheckShards(t *testing.T) {
	ctx := context.Background()
	open := func(t *testing.T) persistence.Journal {
		t.Helper()
		j, err := journal.OpenSQLite(filepath.Join(t.TempDir(), "journal.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = j.Close() })
		return j
	}
	mismatch := func(t *testing.T, err error, node, recorded string) {
		t.Helper()
		if !errors.Is(err, ErrShardsMismatch) {
			t.Fatalf("err = %v, want ErrShardsMismatch", err)
		}
		for _, want := range []string{"started with " + node, "records " + recorded, "not supported yet"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	}

	t.Run("RecordedOnceThenEnforced", func(t *testing.T) {
		j := open(t)
		if err := checkShards(ctx, j, 4); err != nil {
			t.Fatal(err)
		}
		if err := checkShards(ctx, j, 4); err != nil {
			t.Fatalf("same N again: %v", err)
		}
		n, last, err := recordedShards(ctx, j)
		if err != nil || n != 4 || last != 1 {
			t.Fatalf("recorded %d (last seq %d, %v), want 4 in one event", n, last, err)
		}
		mismatch(t, checkShards(ctx, j, 2), "2", "4")
		mismatch(t, checkShards(ctx, j, 1), "1", "4")
	})
	t.Run("UnshardedWritesNothing", func(t *testing.T) {
		j := open(t)
		if err := checkShards(ctx, j, 1); err != nil {
			t.Fatal(err)
		}
		if used, err := streamUsed(ctx, j, ShardsStream); err != nil || used {
			t.Fatalf("N=1 wrote to %s (%v)", ShardsStream, err)
		}
	})
	t.Run("UnshardedJournalIsOne", func(t *testing.T) {
		j := open(t)
		epoch, _, err := j.AcquireEpoch(ctx, master.DefaultStream)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Append(ctx, master.DefaultStream, epoch, []persistence.Event{{Seq: 1, Msg: wrapperspb.String("x")}}); err != nil {
			t.Fatal(err)
		}
		if err := checkShards(ctx, j, 1); err != nil {
			t.Fatalf("N=1 on an unsharded journal: %v", err)
		}
		mismatch(t, checkShards(ctx, j, 4), "4", "1")
	})
}
