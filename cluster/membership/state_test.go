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

func leaving(addr, id string) result {
	return result{addr: addr, outcome: outcomeLeaving, status: &Status{Node: node(id, addr), Cluster: testCluster, Leaving: true}}
}

func ids(ns []Node) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

func newTestView(failures int, seeds ...string) *view {
	return newView(self, true, testCluster, seeds, failures, 3, time.Second)
}

func TestViewApply(t *testing.T) {
	t.Parallel()
	const a, b, c = "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"
	tests := []struct {
		name        string
		failures    int
		seeds       []string
		rounds      [][]result
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
			name:        "failures below the threshold keep a member",
			failures:    2,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A")}, {failed(a)}, {answer(a, "A")}, {failed(a)}},
			wantMembers: []string{"A", "self"},
			wantTargets: []string{a},
		},
		{
			name:        "n consecutive failures take a member down",
			failures:    2,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A")}, {failed(a)}, {failed(a)}},
			wantMembers: []string{"self"},
			wantTargets: []string{a},
			wantLeft:    []string{"A"},
		},
		{
			name:        "a member declared down never comes back under its id",
			failures:    1,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A")}, {failed(a)}, {answer(a, "A")}},
			wantMembers: []string{"self"},
			wantTargets: []string{a},
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
			name:     "a dead learned member is forgotten and not learned again",
			failures: 2,
			seeds:    []string{a},
			rounds: [][]result{
				{answer(a, "A", node("B", b))},
				{answer(a, "A", node("B", b)), answer(b, "B")},
				{answer(a, "A", node("B", b)), failed(b)},
				{answer(a, "A", node("B", b)), failed(b)},
				{answer(a, "A", node("B", b))}, // a stale view still lists B
			},
			wantMembers: []string{"A", "self"},
			wantTargets: []string{a},
		},
		{
			name:        "an unreachable learned endpoint is forgotten",
			failures:    2,
			seeds:       []string{a},
			rounds:      [][]result{{answer(a, "A", node("B", b))}, {failed(b)}, {failed(b)}},
			wantMembers: []string{"A", "self"},
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
			name:     "a member known under two endpoints goes down once, everywhere",
			failures: 1,
			seeds:    []string{a, "localhost:1"},
			rounds: [][]result{
				{answer(a, "A"), answer("localhost:1", "A")},
				{failed(a), answer("localhost:1", "A")},
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
			for _, r := range tt.rounds {
				ch = v.apply(r)
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

func TestViewSelfEjection(t *testing.T) {
	t.Parallel()
	const a, b = "127.0.0.1:1", "127.0.0.1:2"
	v := newTestView(2, a, b) // eject after 3 rounds
	listed := []result{answer(a, "A", self), answer(b, "B")}
	absent := []result{answer(a, "A"), answer(b, "B")}
	unreachable := []result{failed(a), failed(b)}

	require.False(t, v.apply(listed).ejected)
	require.False(t, v.apply(absent).ejected)
	require.False(t, v.apply(absent).ejected)
	require.False(t, v.apply(listed).ejected, "one peer listing us resets the count")
	require.False(t, v.apply(absent).ejected)
	require.False(t, v.apply(absent).ejected)
	require.False(t, v.apply(unreachable).ejected, "rounds without a reachable peer do not count")
	require.True(t, v.apply(absent).ejected, "third round in a row with answers that omit us")
	require.False(t, v.apply(absent).ejected, "reported once")

	client := newView(Node{ID: "cl"}, false, testCluster, []string{a}, 2, 1, time.Second)
	require.False(t, client.apply([]result{answer(a, "A")}).ejected, "clients are never listed: no check")
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
	v.apply([]result{r})
	require.Equal(t, []string{"V", "W"}, ids(v.allClients(now)))
	v.apply([]result{leaving(a, "A")})
	require.Equal(t, []string{"W"}, ids(v.allClients(now)), "a peer's clients go with it")
}

func TestViewReject(t *testing.T) {
	t.Parallel()
	const a, b = "127.0.0.1:1", "127.0.0.1:2"
	v := newTestView(2, a, b)
	v.apply([]result{answer(a, "A"), answer(b, "B")})
	ch := v.reject([]string{"B", "self", "nobody"})
	require.Equal(t, []string{"B"}, ids(ch.left))
	require.Equal(t, []string{"A", "self"}, ids(v.members()))
	v.apply([]result{answer(a, "A"), answer(b, "B")})
	require.Equal(t, []string{"A", "self"}, ids(v.members()), "a refused id stays out")
}

// FuzzViewAgainstModel checks the view against a dumb model: with fixed
// incarnations at seed endpoints, a member is alive iff its last answer was
// good, it has not since failed `failures` times in a row, it never left,
// and it was never declared down.
func FuzzViewAgainstModel(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{1, 0, 3, 3, 0, 6, 6, 6, 0})
	f.Add([]byte{3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		failures := int(ops[0]%4) + 1
		addrs := []string{"h:1", "h:2", "h:3"}
		idOf := []string{"A", "B", "C"}
		v := newTestView(failures, addrs...)
		alive := make([]bool, 3)
		dead := make([]bool, 3)
		fails := make([]int, 3)
		for _, op := range ops[1:] {
			i, kind := int(op%3), (op/3)%3
			var r result
			switch kind {
			case 0:
				r = answer(addrs[i], idOf[i])
				fails[i] = 0
				if !dead[i] {
					alive[i] = true
				}
			case 1:
				r = failed(addrs[i])
				fails[i]++
				if alive[i] && fails[i] >= failures {
					alive[i], dead[i] = false, true
				}
			case 2:
				r = leaving(addrs[i], idOf[i])
				alive[i], dead[i] = false, true
			}
			v.apply([]result{r})

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
			require.Equal(t, addrs, v.targets(), "seeds are probed forever")
		}
	})
}
