// Package pullcluster makes the work pulling pattern (actors/pulling) a
// cluster citizen: an Epic's durable master is a protoactor cluster kind
// (one activation per Epic name, on whichever member hashing places it),
// and workers on any node, member or client, find it through cluster
// membership, register and pull. A worker node that joins mid-Epic is told
// WorkAvailable at once; one that leaves or dies has its unconfirmed items
// handed out again. The master's position is journaled (stream
// "pulling/<name>"), so when its member dies the next activation, on
// another member, resumes the Epic from the last confirmed position.
//
// It is glue: actors/pulling has the master and worker, actors/persistence
// the journal runtime; this package wires them to protoactor's cluster:
//
//   - the master kind ([EpicMaster]) holds a lease on its stream in the
//     journal (so two activations that cannot see each other do not take
//     turns fencing each other), guarded by this node's view of the
//     placement (cluster/node's RendezvousOwner) and the membership's
//     CutOff; it checks for a newer activation's events (fence check), and
//     a stray activation that waits for the lease too long stops;
//   - [Node.WorkerProps] and [Node.Route] find the master through the
//     cluster, never at an activation on a node that left;
//   - [Node.Start], [Node.Progress] and [Node.Wait] begin an Epic (the start
//     is idempotent and answered once durable), read its durable progress
//     and wait for its end.
//
// [Join] starts a member node (it hosts masters; give it [Config.Master])
// or a client node (it only runs workers and asks).
//
// # Example
//
//	master := pullcluster.EpicMaster(j, openRecipients, pulling.WithCodec(codec))
//	n, err := pullcluster.Join(ctx, pullcluster.Config{Provider: p, Member: true, Master: master})
//	...
//	_, err = n.Start(ctx, "campaign-42")
//	props, err := pullcluster.WorkerProps(n, "campaign-42", send, pulling.WithCodec(codec))
//	n.System().Root.Spawn(props)
//	final, err := n.Wait(ctx, "campaign-42", time.Second)
package pullcluster
