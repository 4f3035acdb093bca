package etcdmembers

import (
	"log/slog"
	"sync"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"

	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/membership/internal/alias"
)

// clusterSink hands member lists to protoactor's member list, each member
// under the id protoactor knows it by (see package alias), and hands a
// member protoactor refuses (its id blocked) over again under a fresh
// alias.
type clusterSink struct {
	c   *cluster.Cluster
	log *slog.Logger
	sub *eventstream.Subscription

	mu       sync.Mutex
	aliases  *alias.Aliases
	accepted map[string]bool // protoactor ids in the cluster's last published topology
}

func newClusterSink(c *cluster.Cluster, self string, log *slog.Logger) *clusterSink {
	s := &clusterSink{c: c, log: log, aliases: alias.New(self)}
	s.sub = c.ActorSystem.EventStream.Subscribe(func(evt any) {
		if t, ok := evt.(*cluster.ClusterTopology); ok {
			ids := make(map[string]bool, len(t.Members))
			for _, m := range t.Members {
				ids[m.Id] = true
			}
			s.mu.Lock()
			s.accepted = ids
			s.mu.Unlock()
		}
	})
	return s
}

func (s *clusterSink) push(nodes []membership.Node) {
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	// A refused member is handed over again under a fresh alias, once.
	for attempt := 0; attempt < 2; attempt++ {
		s.mu.Lock()
		aliases := s.aliases.Next(ids)
		s.mu.Unlock()
		members := make([]*cluster.Member, len(nodes))
		for i, n := range nodes {
			members[i] = &cluster.Member{Id: aliases[i], Host: n.Host, Port: int32(n.Port), Kinds: append([]string(nil), n.Kinds...)}
		}
		s.c.MemberList.UpdateClusterTopology(members)
		s.mu.Lock()
		refused := 0
		for i, n := range nodes {
			if s.accepted != nil && !s.accepted[aliases[i]] {
				s.aliases.Forget(n.ID)
				refused++
				s.log.Info("member refused by the cluster (blocked id); handing it over under a new alias", "member", n.ID, "alias", aliases[i])
			}
		}
		s.mu.Unlock()
		if refused == 0 {
			return
		}
	}
}

func (s *clusterSink) close() {
	s.c.ActorSystem.EventStream.Unsubscribe(s.sub)
}
