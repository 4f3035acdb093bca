package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/effect"
)

var t0 = time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)

func member(id, addr string) Member { return Member{ID: id, Address: addr, Kinds: []string{"master"}} }

// viewStep is one input of a view table test and what must hold after it.
type viewStep struct {
	at      time.Duration // since t0
	in      any
	alive   []string // member ids alive after the step, sorted
	changed bool     // a Changed effect was returned
}

// TestViewTable: crash detection by fast failures, the detection delay of
// silence, false suspicion and re-admission, a graceful leave and a
// restart under a new incarnation.
func TestViewTable(t *testing.T) {
	t.Parallel()
	a, b := member("a", "10.0.0.1:1"), member("b", "10.0.0.2:1")
	b2 := member("b2", "10.0.0.2:1")
	ok := func(m Member) Probed { return Probed{Addr: m.Address, Result: ProbeOK, Member: m} }
	refresh := effect.Fired{Name: TimerRefresh}
	tests := []struct {
		name  string
		steps []viewStep
	}{
		{"joins on its first good answer", []viewStep{
			{0, ok(b), []string{"a", "b"}, true},
			{50 * time.Millisecond, ok(b), []string{"a", "b"}, false},
		}},
		{"a crash: two fast failures in a row take it down at once", []viewStep{
			{0, ok(b), []string{"a", "b"}, true},
			{100 * time.Millisecond, Probed{Addr: b.Address, Result: ProbeFailed}, []string{"a", "b"}, false},
			{125 * time.Millisecond, Probed{Addr: b.Address, Result: ProbeFailed}, []string{"a"}, true},
		}},
		{"a good answer between failures resets the count", []viewStep{
			{0, ok(b), []string{"a", "b"}, true},
			{100 * time.Millisecond, Probed{Addr: b.Address, Result: ProbeFailed}, []string{"a", "b"}, false},
			{200 * time.Millisecond, ok(b), []string{"a", "b"}, false},
			{300 * time.Millisecond, Probed{Addr: b.Address, Result: ProbeFailed}, []string{"a", "b"}, false},
		}},
		{"silence: down only after the detection delay", []viewStep{
			{0, ok(b), []string{"a", "b"}, true},
			{500 * time.Millisecond, Probed{Addr: b.Address, Result: ProbeSilent}, []string{"a", "b"}, false},
			{999 * time.Millisecond, refresh, []string{"a", "b"}, false},
			{time.Second, refresh, []string{"a"}, true},
		}},
		{"false suspicion: a paused member is re-admitted when it answers again", []viewStep{
			{0, ok(b), []string{"a", "b"}, true},
			{1100 * time.Millisecond, refresh, []string{"a"}, true},
			{1500 * time.Millisecond, ok(b), []string{"a", "b"}, true},
		}},
		{"a graceful leave is for good", []viewStep{
			{0, ok(b), []string{"a", "b"}, true},
			{100 * time.Millisecond, Probed{Addr: b.Address, Result: ProbeLeaving, Member: b}, []string{"a"}, true},
			{200 * time.Millisecond, ok(b), []string{"a"}, false},
		}},
		{"a restart on the same endpoint: the old incarnation is gone, the new one joins", []viewStep{
			{0, ok(b), []string{"a", "b"}, true},
			{100 * time.Millisecond, ok(b2), []string{"a", "b2"}, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := NewView(a, true, []string{a.Address, b.Address}, DefaultRules())
			effs := v.Step(t0, Start{})
			require.Equal(t, []effect.Effect{Probe{Addr: b.Address}, effect.Timer{Name: TimerRefresh, At: t0.Add(100 * time.Millisecond)}}, effs)
			for i, s := range tt.steps {
				effs := v.Step(t0.Add(s.at), s.in)
				var ids []string
				for _, m := range v.Members() {
					ids = append(ids, m.ID)
				}
				require.Equal(t, s.alive, ids, "step %d", i)
				changed := false
				for _, e := range effs {
					if c, ok := e.(Changed); ok {
						changed = true
						require.Equal(t, v.Members(), c.Members, "step %d", i)
					}
				}
				require.Equal(t, s.changed, changed, "step %d: effects %v", i, effs)
			}
		})
	}
}

// TestViewFollowUpProbe: a fast failure of a live member is probed again
// after FollowUp, before the next refresh.
func TestViewFollowUpProbe(t *testing.T) {
	t.Parallel()
	a, b := member("a", "10.0.0.1:1"), member("b", "10.0.0.2:1")
	v := NewView(a, true, []string{b.Address}, DefaultRules())
	v.Step(t0, Start{})
	v.Step(t0, Probed{Addr: b.Address, Result: ProbeOK, Member: b})
	effs := v.Step(t0.Add(time.Millisecond), Probed{Addr: b.Address, Result: ProbeFailed})
	require.Equal(t, []effect.Effect{effect.Timer{Name: "followup:" + b.Address, At: t0.Add(26 * time.Millisecond)}}, effs)
	require.Equal(t, []effect.Effect{Probe{Addr: b.Address}}, v.Step(t0.Add(26*time.Millisecond), effect.Fired{Name: "followup:" + b.Address}))
}

// TestViewPlacementFollowsMembership: the master's owner moves when its
// member goes down and back when it is re-admitted; Owns and CutOff.
func TestViewPlacementFollowsMembership(t *testing.T) {
	t.Parallel()
	ms := []Member{member("a", "10.0.0.1:1"), member("b", "10.0.0.2:1"), member("c", "10.0.0.3:1")}
	owner := Owner(ms, "master", "master")
	var self, other Member
	for _, m := range ms {
		if m.Address != owner {
			self = m
		}
	}
	for _, m := range ms {
		if m.Address != owner && m.ID != self.ID {
			other = m
		}
	}
	v := NewView(self, true, []string{ms[0].Address, ms[1].Address, ms[2].Address}, DefaultRules())
	v.Step(t0, Start{})
	require.False(t, v.CutOff(t0), "never heard from anyone: a cluster of one is not cut off")
	for _, m := range ms {
		v.Step(t0, Probed{Addr: m.Address, Result: ProbeOK, Member: m})
	}
	require.Equal(t, owner, v.Owner("master", "master"))
	require.False(t, v.Owns("master", "master"))
	// The owner crashes: the master moves to where the other two place it.
	v.Step(t0.Add(100*time.Millisecond), Probed{Addr: owner, Result: ProbeFailed})
	v.Step(t0.Add(125*time.Millisecond), Probed{Addr: owner, Result: ProbeFailed})
	next := Owner([]Member{self, other}, "master", "master")
	require.Equal(t, next, v.Owner("master", "master"))
	require.Equal(t, next == self.Address, v.Owns("master", "master"))
	require.False(t, v.Alive(owner))
	// Nothing heard for Silence: cut off, and every peer is down.
	v.Step(t0.Add(1200*time.Millisecond), effect.Fired{Name: TimerRefresh})
	require.True(t, v.CutOff(t0.Add(1200*time.Millisecond)))
	require.Equal(t, []Member{self}, v.Members())
	require.Equal(t, self.Address, v.Owner("master", "master"), "alone, this node places the master on itself")
	require.Empty(t, Owner(nil, "master", "master"))
}

func TestShardOf(t *testing.T) {
	t.Parallel()
	require.Equal(t, 0, ShardOf("x", 1))
	require.Equal(t, "master", ShardName("master", 0, 1))
	require.Equal(t, "master/2", ShardName("master", 2, 3))
	require.Equal(t, "master", ShardKind("master", 0, 1))
	require.Equal(t, "master-2", ShardKind("master", 2, 3))
	counts := make([]int, 4)
	for i := range 4000 {
		counts[ShardOf("work-"+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('0'+i/676)), 4)]++
	}
	for k, c := range counts {
		require.Greater(t, c, 700, "shard %d", k)
	}
}
