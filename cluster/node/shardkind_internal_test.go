package node

import (
	"testing"

	"github.com/asynkron/protoactor-go/cluster"

	"github.com/foreman-actors/foreman/actors/route"
)

// TestShardKindPlacement: protoactor's placement actor decides, on every
// topology change, whether it still owns each activation from the key
// kind/identity (Rendezvous.GetByIdentity); lookups place it by
// GetByClusterIdentity. The two must agree for every shard's master, or
// the placement actor stops healthy masters on every membership change
// (it did with the kind "master/k").
func TestShardKindPlacement(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 4, 16} {
		var kinds []string
		for k := range n {
			kinds = append(kinds, ShardKind(k, n))
		}
		var members []*cluster.Member
		for i := range 3 {
			members = append(members, &cluster.Member{Id: "m" + string(rune('a'+i)), Host: "127.0.0.1", Port: int32(2551 + i), Kinds: kinds})
		}
		rdv := cluster.NewRendezvous()
		rdv.UpdateMembers(members)
		for k := range n {
			ci := &cluster.ClusterIdentity{Kind: ShardKind(k, n), Identity: route.ShardName(MasterIdentity, k, n)}
			want := rdv.GetByClusterIdentity(ci)
			if want == "" {
				t.Fatalf("n=%d shard %d: no owner", n, k)
			}
			if got := rdv.GetByIdentity(ci.AsKey()); got != want {
				t.Errorf("n=%d shard %d (kind %q): the placement actor's owner %q, the lookup's %q", n, k, ci.Kind, got, want)
			}
		}
	}
}
