package route_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/route"
)

// TestOwnerMatchesProtoactor: route.Owner places every identity where
// protoactor's rendezvous hashing (what cluster/node's RendezvousOwner and
// the placement actor use) places it, over random topologies: members
// with and without the kind, in any order, restarted incarnations.
func TestOwnerMatchesProtoactor(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(35, 1))
	kinds := []string{"master", "master-0", "master-1", "master-2"}
	for round := range 2000 {
		n := rng.IntN(7)
		var ours []route.Member
		var theirs []*cluster.Member
		for i := range n {
			id := fmt.Sprintf("node-%d-%d", rng.IntN(100), i)
			port := 2550 + rng.IntN(20)
			var ks []string
			for _, k := range kinds {
				if rng.IntN(3) > 0 {
					ks = append(ks, k)
				}
			}
			ours = append(ours, route.Member{ID: id, Address: fmt.Sprintf("127.0.0.%d:%d", 1+rng.IntN(3), port), Kinds: ks})
			m := ours[len(ours)-1]
			host, portStr := m.Address[:len(m.Address)-5], m.Address[len(m.Address)-4:]
			var p int
			_, _ = fmt.Sscan(portStr, &p)
			theirs = append(theirs, &cluster.Member{Id: id, Host: host, Port: int32(p), Kinds: ks})
		}
		kind := kinds[rng.IntN(len(kinds))]
		identity := route.ShardName("master", rng.IntN(3), 1+rng.IntN(3))
		rdv := cluster.NewRendezvous()
		rdv.UpdateMembers(theirs)
		want := rdv.GetByClusterIdentity(&cluster.ClusterIdentity{Kind: kind, Identity: identity})
		require.Equal(t, want, route.Owner(ours, kind, identity), "round %d: %v %s/%s", round, ours, kind, identity)
		rng.Shuffle(len(ours), func(i, j int) { ours[i], ours[j] = ours[j], ours[i] })
		require.Equal(t, want, route.Owner(ours, kind, identity), "round %d shuffled", round)
	}
}
