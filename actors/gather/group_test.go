package gather_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/gather"
)

// TestGroup drives a Group through adds, answers and callers leaving, and
// checks which items travel together and when: the first at once and
// alone, the rest gathered while maxInFlight groups are out, groups cut at
// the item and byte bounds, nothing sent after its caller left.
func TestGroup(t *testing.T) {
	t.Parallel()
	type op struct {
		add    string // an item to add (size: size, 10 when 0)
		size   int
		answer bool   // a group in flight was answered
		remove string // the caller of this waiting item left
		want   []string
	}
	for _, tc := range []struct {
		name                  string
		inFlight, items, size int
		ops                   []op
	}{{
		name: "the first goes alone and at once", inFlight: 1, items: 10, size: 100,
		ops: []op{{add: "a", want: []string{"a"}}, {answer: true}},
	}, {
		name: "the rest wait for an answer and go together", inFlight: 1, items: 10, size: 100,
		ops: []op{
			{add: "a", want: []string{"a"}},
			{add: "b"}, {add: "c"}, {add: "d"},
			{answer: true, want: []string{"b", "c", "d"}},
			{add: "e"},
			{answer: true, want: []string{"e"}},
			{answer: true},
			{add: "f", want: []string{"f"}},
		},
	}, {
		name: "two in flight", inFlight: 2, items: 10, size: 100,
		ops: []op{
			{add: "a", want: []string{"a"}},
			{add: "b", want: []string{"b"}},
			{add: "c"}, {add: "d"},
			{answer: true, want: []string{"c", "d"}},
			{add: "e"},
			{answer: true, want: []string{"e"}},
		},
	}, {
		name: "cut at the item bound", inFlight: 1, items: 2, size: 100,
		ops: []op{
			{add: "a", want: []string{"a"}},
			{add: "b"}, {add: "c"}, {add: "d"},
			{answer: true, want: []string{"b", "c"}},
			{answer: true, want: []string{"d"}},
		},
	}, {
		name: "cut at the byte bound; a large item goes alone", inFlight: 1, items: 10, size: 100,
		ops: []op{
			{add: "a", want: []string{"a"}},
			{add: "b", size: 60}, {add: "c", size: 50}, {add: "big", size: 500}, {add: "d", size: 10},
			{answer: true, want: []string{"b"}},
			{answer: true, want: []string{"c"}},
			{answer: true, want: []string{"big"}},
			{answer: true, want: []string{"d"}},
		},
	}, {
		name: "a caller that left is not sent", inFlight: 1, items: 10, size: 100,
		ops: []op{
			{add: "a", want: []string{"a"}},
			{add: "b"}, {add: "c"},
			{remove: "b"},
			{answer: true, want: []string{"c"}},
			{remove: "c"}, // already sent: out of the group's hands
			{answer: true},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := gather.NewGroup[string](tc.inFlight, tc.items, tc.size)
			for i, o := range tc.ops {
				var got []string
				switch {
				case o.add != "":
					size := o.size
					if size == 0 {
						size = 10
					}
					got = g.Add(o.add, size)
				case o.answer:
					got = g.Answered()
				case o.remove != "":
					g.Remove(func(s string) bool { return s == o.remove })
				}
				require.Equal(t, o.want, got, "op %d %+v", i, o)
				require.LessOrEqual(t, g.InFlight(), tc.inFlight)
			}
			require.Zero(t, g.Waiting(), "items left waiting")
		})
	}
}

// TestGroupNeverLosesAnItem adds and answers in a seeded interleaving and
// checks that every item is sent exactly once, in the order added, and
// that no more than maxInFlight groups are ever out.
func TestGroupNeverLosesAnItem(t *testing.T) {
	t.Parallel()
	for seed := range uint64(200) {
		g := gather.NewGroup[int](int(seed%3)+1, int(seed%5)+1, 64)
		rng := seed*6364136223846793005 + 1442695040888963407
		nextRand := func(n uint64) uint64 {
			rng = rng*6364136223846793005 + 1442695040888963407
			return (rng >> 33) % n
		}
		var sent []int
		out := 0
		added := 0
		for added < 100 || out > 0 {
			var got []int
			if added < 100 && (out == 0 || nextRand(3) > 0) {
				got = g.Add(added, int(nextRand(40))+1)
				added++
			} else {
				got = g.Answered()
				out--
			}
			if got != nil {
				out++
			}
			sent = append(sent, got...)
			require.LessOrEqual(t, out, int(seed%3)+1, "seed %d", seed)
			require.Equal(t, out, g.InFlight(), "seed %d", seed)
		}
		want := make([]int, 100)
		for i := range want {
			want[i] = i
		}
		require.Equal(t, want, sent, "seed %d", seed)
	}
}
