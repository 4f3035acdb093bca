package membership

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const testCluster = "c"

var self = Node{ID: "self", Host: "127.0.0.1", Port: 2551, HTTP: "127.0.0.1:6551", Kinds: []string{"k"}}

func node(id, http string) Node {
	return Node{ID: id, Host: "127.0.0.1", Port: 1, HTTP: http}
}

// answer is a good answer of the member id at endpoint addr that lists
// the given members.
func answer(addr, id string, members ...Node) result {
	return result{addr: addr, outcome: outcomeOK, status: &Status{Node: node(id, addr), Cluster: testCluster, Members: members}}
}

func failed(addr string) result { return result{addr: addr, outcome: outcomeFailed} }

func silent(addr string) result { return result{addr: addr, outcome: outcomeSilent} }

func leaving(addr, id string) result {
	return result{addr: addr, outcome: outcomeLeaving, status: &Status{Node: node(id, addr), Cluster: testCluster, Leaving: true}}
}

// step is the time between two rounds of a test: the default refresh.
const step = DefaultRefresh

var t0 = time.Unix(1000, 0)

// testRules are the default thresholds, with failures fast failures.
func testRules(failures int) rules {
	return rules{failures: failures, silence: DefaultSilence, forget: DefaultForget, clientTTL: time.Second}
}

func ids(ns []Node) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

func newTestView(failures int, seeds ...string) *view {
	return newView(self, true, testCluster, seeds, testRules(failures))
}

// rounds repeats r n times.
func rounds(n int, r ...result) [][]result {
	out := make([][]result, n)
	for i := range out {
		out[i] = r
	}
	return out
}

func TestViewApply(t *testing.T) {
	t.Parallel()
	const a, b, c = "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"
	silenceRounds := int(DefaultSilence / step)
	forgetRounds := int(DefaultForget / step)
	tests := []struct {
		name        string
		failures    int
		seeds       []string
		rounds      [][]result // one per step of time
		wantMembers []string
		wantTargets []string
		wantJoined  []string // ids joined in the last round
		wantLeft    []string // ids left in the last round
	}{
		{
			name:        "a seed that answers joins",
			failures:    2,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A")}},
			wantMembers: []string{"A", "self"},
			wantTargets: []string{a},
			wantJoined:  []string{"A"},
		},
		{
			name:        "fast failures below the threshold keep a member",
			failures:    2,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A")}, {failed(a)}, {answer(a, "A")}, {failed(a)}},
			wantMembers: []string{"A", "self"},
			wantTargets: []string{a},
		},
		{
			name:        "n consecutive fast failures take a member down",
			failures:    2,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A")}, {failed(a)}, {failed(a)}},
			wantMembers: []string{"self"},
			wantTargets: []string{a},
			wantLeft:    []string{"A"},
		},
		{
			name:        "a member taken down joins again under its id when it answers",
			failures:    1,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A")}, {failed(a)}, {failed(a)}, {answer(a, "A")}},
			wantMembers: []string{"A", "self"},
			wantTargets: []string{a},
			wantJoined:  []string{"A"},
		},
		{
			name:        "silent probes alone do not take a member down within the silence",
			failures:    1,
			seeds:       []string{a},
			rounds:      append([][]result{{answer(a, "A")}}, rounds(silenceRounds-1, silent(a))...),
			wantMembers: []string{"A", "self"},
			wantTargets: []string{a},
		},
		{
			name:        "no good answer for the silence takes a member down",
			failures:    1,
			seeds:       []string{a},
			rounds:      append([][]result{{answer(a, "A")}}, rounds(silenceRounds, silent(a))...),
			wantMembers: []string{"self"},
			wantTargets: []string{a},
			wantLeft:    []string{"A"},
		},
		{
			name:     "a silent member joins again when the partition heals",
			failures: 2,
			seeds:    []string{a},
			rounds: append(append([][]result{{answer(a, "A")}}, rounds(2*silenceRounds, silent(a))...),
				[]result{answer(a, "A")}),
			wantMembers: []string{"A", "self"},
			wantTargets: []string{a},
			wantJoined:  []string{"A"},
		},
		{
			name:        "a restarted seed joins under its new id",
			failures:    1,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A")}, {failed(a)}, {answer(a, "A2")}},
			wantMembers: []string{"A2", "self"},
			wantTargets: []string{a},
			wantJoined:  []string{"A2"},
		},
		{
			name:        "an old incarnation never comes back once replaced",
			failures:    1,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A")}, {answer(a, "A2")}, {answer(a, "A")}},
			wantMembers: []string{"self"},
			wantTargets: []string{a},
			wantLeft:    []string{"A2"},
		},
		{
			name:        "an endpoint answering for a new incarnation replaces the old one",
			failures:    5,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A")}, {answer(a, "A2")}},
			wantMembers: []string{"A2", "self"},
			wantTargets: []string{a},
			wantJoined:  []string{"A2"},
			wantLeft:    []string{"A"},
		},
		{
			name:        "a leaving member is dropped at once",
			failures:    100,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A")}, {leaving(a, "A")}},
			wantMembers: []string{"self"},
			wantTargets: []string{a},
			wantLeft:    []string{"A"},
		},
		{
			name:        "a member that left never comes back under its id",
			failures:    100,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A")}, {leaving(a, "A")}, {answer(a, "A")}},
			wantMembers: []string{"self"},
			wantTargets: []string{a},
		},
		{
			name:        "members are learned from answers, alive only once probed",
			failures:    2,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A", node("A", a), node("B", b), self)}},
			wantMembers: []string{"A", "self"},
			wantTargets: []string{a, b},
			wantJoined:  []string{"A"},
		},
		{
			name:     "a learned member joins when its own probe answers",
			failures: 2,
			seeds:    []string{a},
			rounds: [][]result{
				{answer(a, "A", node("B", b))},
				{answer(a, "A", node("B", b)), answer(b, "B", node("C", c))},
			},
			wantMembers: []string{"A", "B", "self"},
			wantTargets: []string{a, b, c},
			wantJoined:  []string{"B"},
		},
		{
			name:     "a member is not dropped because another forgot it",
			failures: 2,
			seeds:    []string{a},
			rounds: [][]result{
				{answer(a, "A", node("B", b))},
				{answer(a, "A", node("B", b)), answer(b, "B")},
				{answer(a, "A"), answer(b, "B")},
				{answer(a, "A"), answer(b, "B")},
			},
			wantMembers: []string{"A", "B", "self"},
			wantTargets: []string{a, b},
		},
		{
			name:     "a learned member that went down is still probed and joins again",
			failures: 2,
			seeds:    []string{a},
			rounds: [][]result{
				{answer(a, "A", node("B", b))},
				{answer(a, "A"), answer(b, "B")},
				{answer(a, "A"), failed(b)},
				{answer(a, "A"), failed(b)},
				{answer(a, "A"), silent(b)},
				{answer(a, "A"), answer(b, "B")},
			},
			wantMembers: []string{"A", "B", "self"},
			wantTargets: []string{a, b},
			wantJoined:  []string{"B"},
		},
		{
			name:     "a learned endpoint down for the forget period is no longer probed",
			failures: 2,
			seeds:    []string{a},
			rounds: append([][]result{
				{answer(a, "A", node("B", b))},
				{answer(a, "A"), answer(b, "B")},
				{answer(a, "A"), failed(b)},
				{answer(a, "A"), failed(b)},
			}, rounds(forgetRounds, answer(a, "A"), failed(b))...),
			wantMembers: []string{"A", "self"},
			wantTargets: []string{a},
		},
		{
			name:        "a learned endpoint that never answers is forgotten too",
			failures:    2,
			seeds:       []string{a},
			rounds:      append([][]result{{answer(a, "A", node("B", b))}}, rounds(forgetRounds, answer(a, "A"), silent(b))...),
			wantMembers: []string{"A", "self"},
			wantTargets: []string{a},
		},
		{
			name:        "a seed is probed for ever",
			failures:    2,
			seeds:       []string{a},
			rounds:      append([][]result{{answer(a, "A")}}, rounds(2*forgetRounds, failed(a))...),
			wantMembers: []string{"self"},
			wantTargets: []string{a},
		},
		{
			name:        "a seed that is this node is not probed again",
			failures:    2,
			seeds:       []string{a, "localhost:6551"},
			rounds:      [][]result{{answer(a, "A"), answer("localhost:6551", "self")}},
			wantMembers: []string{"A", "self"},
			wantTargets: []string{a},
			wantJoined:  []string{"A"},
		},
		{
			name:        "this node's own endpoint is never a target",
			failures:    2,
			seeds:       []string{self.HTTP},
			rounds:      [][]result{{}},
			wantMembers: []string{"self"},
			wantTargets: []string{},
		},
		{
			name:     "a member known under two endpoints goes down everywhere",
			failures: 1,
			seeds:    []string{a, "localhost:1"},
			rounds: [][]result{
				{answer(a, "A"), answer("localhost:1", "A")},
				{failed(a), silent("localhost:1")},
			},
			wantMembers: []string{"self"},
			wantTargets: []string{a, "localhost:1"},
			wantLeft:    []string{"A"},
		},
		{
			name:        "unknown endpoints in results are ignored",
			failures:    2,
			seeds:       []string{a},
			rounds:      [][]result{{answer(c, "C")}},
			wantMembers: []string{"self"},
			wantTargets: []string{a},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newTestView(tt.failures, tt.seeds...)
			var ch change
			now := t0
			for _, r := range tt.rounds {
				now = now.Add(step)
				ch = v.apply(now, r)
			}
			require.Equal(t, tt.wantMembers, ids(v.members()))
			require.Equal(t, tt.wantTargets, v.targets())
			require.Equal(t, tt.wantJoined, nilIfEmpty(ids(ch.joined)), "joined in the last round")
			require.Equal(t, tt.wantLeft, nilIfEmpty(ids(ch.left)), "left in the last round")
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestViewCutOff(t *testing.T) {
	t.Parallel()
	const a = "127.0.0.1:1"
	v := newTestView(2, a)
	require.False(t, v.cutOff(t0.Add(time.Hour)), "a node that never heard from another is a cluster of one, not cut off")

	v.apply(t0, []result{answer(a, "A")})
	require.False(t, v.cutOff(t0.Add(DefaultSilence-time.Nanosecond)))
	require.True(t, v.cutOff(t0.Add(DefaultSilence)), "silence since the last good answer")

	v.heardFrom(t0.Add(2*DefaultSilence), Node{ID: "W", Port: 40000})
	require.False(t, v.cutOff(t0.Add(2*DefaultSilence)), "a probe received is contact too")
	v.apply(t0.Add(3*DefaultSilence), []result{silent(a), failed(a)})
	require.True(t, v.cutOff(t0.Add(3*DefaultSilence)), "failed probes are no contact")
	v.heardFrom(t0.Add(4*DefaultSilence), Node{})
	require.True(t, v.cutOff(t0.Add(4*DefaultSilence)), "an anonymous probe is no contact")
}

func TestViewHeardFromAndClients(t *testing.T) {
	t.Parallel()
	const a, b = "127.0.0.1:1", "127.0.0.1:2"
	now := time.Unix(1000, 0)
	v := newTestView(2, a)

	v.heardFrom(now, node("B", b))
	require.Equal(t, []string{a, b}, v.targets(), "a member that probes us is learned")
	v.heardFrom(now, Node{ID: "W", Host: "127.0.0.1", Port: 40000})
	v.heardFrom(now, Node{}) // anonymous: ignored
	v.heardFrom(now, self)   // ourselves: ignored
	require.Equal(t, []string{"W"}, ids(v.directClients(now)))
	require.Equal(t, []string{"W"}, ids(v.directClients(now.Add(time.Second))), "kept for the TTL")
	require.Empty(t, v.directClients(now.Add(time.Second+time.Nanosecond)), "forgotten after the TTL")

	// Clients reported by alive peers are merged, duplicates once.
	v.heardFrom(now, Node{ID: "W", Port: 40000})
	r := answer(a, "A")
	r.status.Clients = []Node{{ID: "V", Port: 40001}, {ID: "W", Port: 40000}}
	v.apply(now, []result{r})
	require.Equal(t, []string{"V", "W"}, ids(v.allClients(now)))
	v.apply(now, []result{leaving(a, "A")})
	require.Equal(t, []string{"W"}, ids(v.allClients(now)), "a peer's clients go with it")
}

func TestViewReject(t *testing.T) {
	t.Parallel()
	const a, b = "127.0.0.1:1", "127.0.0.1:2"
	v := newTestView(2, a, b)
	v.apply(t0, []result{answer(a, "A"), answer(b, "B")})
	ch := v.reject(t0, []string{"B", "self", "nobody"})
	require.Equal(t, []string{"B"}, ids(ch.left))
	require.Equal(t, []string{"A", "self"}, ids(v.members()))
	v.apply(t0, []result{answer(a, "A"), answer(b, "B")})
	require.Equal(t, []string{"A", "self"}, ids(v.members()), "a refused id stays out")
}

// FuzzViewAgainstModel checks the view against a dumb model: with fixed
// incarnations at seed endpoints, a member is alive iff it answered since
// it was last taken down, has not since failed fast `failures` times in a
// row nor gone the silence without a good answer, and never left.
func FuzzViewAgainstModel(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{1, 0, 3, 3, 0, 6, 6, 6, 0})
	f.Add([]byte{3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0})
	f.Add([]byte{2, 0, 1, 2, 9, 10, 11, 9, 10, 11, 9, 0, 3, 9, 9, 9, 9})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		failures := int(ops[0]%4) + 1
		addrs := []string{"h:1", "h:2", "h:3"}
		idOf := []string{"A", "B", "C"}
		v := newTestView(failures, addrs...)
		alive := make([]bool, 3)
		left := make([]bool, 3)
		fails := make([]int, 3)
		lastOK := make([]time.Time, 3)
		now := t0
		for _, op := range ops[1:] {
			i, kind := int(op%3), (op/3)%4
			var r result
			switch kind {
			case 0:
				r = answer(addrs[i], idOf[i])
				fails[i], lastOK[i] = 0, now
				if !left[i] {
					alive[i] = true
				}
			case 1:
				r = failed(addrs[i])
				fails[i]++
				if fails[i] >= failures {
					alive[i] = false
				}
			case 2:
				r = leaving(addrs[i], idOf[i])
				alive[i], left[i] = false, true
			case 3:
				r = silent(addrs[i])
				now = now.Add(DefaultSilence / 3) // time passes without answers
			}
			for j := range alive {
				if alive[j] && now.Sub(lastOK[j]) >= DefaultSilence {
					alive[j] = false
				}
			}
			v.apply(now, []result{r})

			want := []string{}
			for j := range addrs {
				if alive[j] {
					want = append(want, idOf[j])
				}
			}
			want = append(want, "self")
			slices.Sort(want)
			got := ids(v.members())
			require.Equal(t, want, got, "after op %d (endpoint %d, kind %d)", op, i, kind)
			require.Equal(t, addrs, v.targets(), "seeds are probed for ever")
		}
	})
}
