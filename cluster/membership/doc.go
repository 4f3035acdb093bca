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
// in parallel each refresh (200 ms) with a short timeout (300 ms), and:
//
//   - learns members transitively from the answers (and members learn the
//     members that probe them), so a new node needs only the seeds; a
//     learned member counts as alive only once this node's own probe of it
//     succeeds;
//   - declares a member down after n consecutive failed probes of its own
//     (default 2), never because another node forgot it, and drops a
//     member that answers "leaving" at once; a member id declared down or
//     gone is never taken back (protoactor blocks it for good; a restarted
//     process has a new id);
//   - pushes the alive members (itself included when it is a member, never
//     clients) to cluster.MemberList.UpdateClusterTopology whenever they
//     change.
//
// With the defaults a SIGKILLed member is dropped by the others in 0.2-0.4
// s (see BENCH.md). Members that cannot be probed for a while (frozen,
// overloaded) are ejected by the others for good; the self-ejection check
// notices when no reachable peer has listed this member for k rounds in a
// row and calls the [WithOnEjected] callback, so that the process can
// restart.
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
