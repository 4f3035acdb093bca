package journal_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
)

// errClass reduces an error to the sentinel a caller branches on.
func errClass(err error) string {
	for _, s := range []error{persistence.ErrFenced, persistence.ErrConflict, persistence.ErrInvalid, persistence.ErrClosed} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return "ok"
}

// runModel drives the SQLite journal and the in-memory one with the same
// operations, decoded from script: appends go through AppendAsync so the
// SQLite writer batches them, the rest are synchronous. Group commit must
// not change any outcome: every call gets the same result as the
// sequential model, and both end with the same contents.
func runModel(t *testing.T, script []byte) {
	model := journal.NewMemory()
	t.Cleanup(func() { require.NoError(t, model.Close()) })
	subject, err := journal.OpenSQLite(filepath.Join(t.TempDir(), "model.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, subject.Close()) })
	ctx := context.Background()

	const streams = 3
	name := func(i byte) string { return fmt.Sprintf("s%d", i%streams) }
	epochs := map[string]int64{}
	lasts := map[string]int64{}
	type pending struct {
		i    int
		want string
		got  chan error
	}
	var async []pending
	next := func() byte {
		if len(script) == 0 {
			return 0
		}
		b := script[0]
		script = script[1:]
		return b
	}
	for i := 0; len(script) > 0; i++ {
		op, s, arg := next(), name(next()), next()
		epoch := epochs[s] + int64(arg%3) - 1 // stale, current or unacquired
		switch op % 6 {
		case 0, 1, 2: // append, usually valid
			first := lasts[s] + 1
			if op%3 == 2 {
				first += int64(arg%5) - 2
			}
			evs := make([]persistence.Event, 1+int(arg%3))
			for k := range evs {
				evs[k] = persistence.Event{Seq: first + int64(k), Msg: wrapperspb.String(fmt.Sprintf("%s-%d-%d", s, i, k))}
			}
			if arg%3 == 1 && op%3 != 2 {
				epoch = epochs[s]
			}
			merr := model.Append(ctx, s, epoch, evs)
			if merr == nil {
				lasts[s] = evs[len(evs)-1].Seq
			}
			p := pending{i: i, want: errClass(merr), got: make(chan error, 1)}
			subject.AppendAsync(s, epoch, evs, func(err error) { p.got <- err })
			async = append(async, p)
		case 3: // acquire
			me, ml, merr := model.AcquireEpoch(ctx, s)
			se, sl, serr := subject.AcquireEpoch(ctx, s)
			require.NoError(t, merr)
			require.NoError(t, serr, "op %d", i)
			require.Equal(t, [2]int64{me, ml}, [2]int64{se, sl}, "op %d: acquire %s", i, s)
			epochs[s] = me
		case 4: // snapshot
			snap := persistence.Snapshot{Seq: lasts[s] - int64(arg%4) + 1, Msg: wrapperspb.Int64(int64(i))}
			require.Equal(t, errClass(model.SaveSnapshot(ctx, s, epoch, snap)), errClass(subject.SaveSnapshot(ctx, s, epoch, snap)), "op %d: snapshot %s", i, s)
		case 5: // delete
			to := lasts[s] - int64(arg%4)
			require.Equal(t, errClass(model.DeleteEvents(ctx, s, epoch, to)), errClass(subject.DeleteEvents(ctx, s, epoch, to)), "op %d: delete %s", i, s)
		}
	}
	for _, p := range async {
		require.Equal(t, p.want, errClass(<-p.got), "op %d: append", p.i)
	}
	for i := range byte(streams) {
		s := name(i)
		require.Equal(t, loadRaw(t, model, s), loadRaw(t, subject, s), "stream %s", s)
		ms, mok, err := model.LoadSnapshot(ctx, s)
		require.NoError(t, err)
		ss, sok, err := subject.LoadSnapshot(ctx, s)
		require.NoError(t, err)
		require.Equal(t, mok, sok)
		require.Equal(t, ms.Seq, ss.Seq)
		require.True(t, proto.Equal(ms.Msg, ss.Msg))
	}
}

func loadRaw(t *testing.T, j persistence.Journal, s string) []string {
	var out []string
	require.NoError(t, j.Load(context.Background(), s, 0, func(e persistence.Event) error {
		out = append(out, fmt.Sprintf("%d:%s", e.Seq, e.Msg.(*wrapperspb.StringValue).GetValue()))
		return nil
	}))
	return out
}

// TestGroupCommitMatchesSequentialModel is the property test: random
// scripts, each run against both journals.
func TestGroupCommitMatchesSequentialModel(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 8 {
		script := make([]byte, 3*300)
		for i := range script {
			script[i] = byte(r.UintN(256))
		}
		t.Run(fmt.Sprint(round), func(t *testing.T) { runModel(t, script) })
	}
}

// FuzzGroupCommitModel explores scripts beyond the seeded ones:
// go test -fuzz FuzzGroupCommitModel ./cluster/journal
func FuzzGroupCommitModel(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 0, 1, 0, 0, 1, 4, 0, 1})
	f.Add([]byte{3, 1, 0, 2, 1, 1, 3, 1, 0, 2, 1, 0, 5, 1, 1, 0, 1, 1})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 3000 {
			t.Skip("script too long")
		}
		runModel(t, script)
	})
}
