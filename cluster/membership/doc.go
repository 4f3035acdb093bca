// Package membership is a protoactor-go cluster.ClusterProvider that needs
// no external service and joins nodes Akka-style, through seed nodes.
//
// Every member serves GET /members (package constant [Path]) on its
// membership endpoint, by default on the bind host (127.0.0.1) at its
// remote port plus 4000 (2551 -> 6551). The answer is a JSON [Status]: the
// member's id, host, port, kinds and cluster name, the members it believes
// alive and the clients that poll it. A leaving member answers 503 with
// "leaving": true.
//
// Every node, member or client, probes the seeds and every member it knows
// every refresh (100 ms), each probe on its own with a short timeout
// (300 ms), and:
//
//   - learns members transitively from the answers (and members learn the
//     members that probe them), so a new node needs only the seeds; a
//     learned member counts as alive only once this node's own probe of it
//     succeeds;
//   - declares a member down by its own probes only, never because another
//     node forgot it: after 2 fast failures in a row (connection refused or
//     reset, a broken answer: the process is gone; the second probe follows
//     25 ms after the first), or after 1 s without a good answer (a probe
//     that times out is silence: the member may be paused, overloaded or
//     cut off); a member that answers "leaving" is dropped at once;
//   - keeps probing a member it declared down, and takes it back when it
//     answers again, so a partition heals by itself with no restart; only
//     a member that left, or whose endpoint answers for a new incarnation
//     (a restarted process has a new id), is gone for good;
//   - pushes the alive members (itself included when it is a member, never
//     clients) to cluster.MemberList.UpdateClusterTopology whenever they
//     change. protoactor blocks the id of a member that leaves its list for
//     the life of the process, so a member that comes back is handed to it
//     under a fresh alias (see package internal/alias).
//
// With the defaults a SIGKILLed member is dropped by the others in about
// 0.03-0.15 s and a partitioned or frozen one after 1 s (see BENCH.md).
// [Provider.CutOff] tells a node that it has heard from nobody for that
// long: the others have dropped it, and it should let go of what only one
// node may hold.
//
// # Usage
//
// Make one provider per cluster and hand it to cluster.Configure; the
// cluster starts it (StartMember for backends, StartClient for frontends
// and workers, which serve nothing) and stops it (Shutdown):
//
//	p, err := membership.New(membership.WithSeeds("127.0.0.1:2551", "127.0.0.1:2552"))
//	if err != nil { ... }
//	cfg := cluster.Configure("foreman", p, disthash.New(),
//		remote.Configure("127.0.0.1", 2551), cluster.WithKinds(kinds...))
//	c := cluster.New(system, cfg)
//	c.StartMember()
//
// [Members] lists the nodes of a cluster with roles for status pages.
//
// # Testing several members in one process
//
// See harness_test.go: start remotes one at a time (Remote.Start replaces
// gRPC's global logger), set Config.GossipInterval high (protoactor's
// gossip races inside protoactor under -race), and stop members without
// cluster.Shutdown (Remote.Shutdown(true) races; stopping the placement
// actor with live grains stalls 10 s).
package membership
