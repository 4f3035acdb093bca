// Package etcdmembers is a protoactor-go cluster.ClusterProvider on etcd
// (go.etcd.io/etcd/client/v3 leases and watches), for clusters whose nodes
// run on several hosts and have an etcd cluster to lean on.
//
// Every node registers one key bound to a lease: a backend under
// PREFIX/<cluster>/members/<id>, a frontend or worker (a cluster client)
// under PREFIX/<cluster>/clients/<id> (listed on status pages only). The
// lease (default 2 s, [WithTTL]) is renewed every third of it with
// KeepAliveOnce under a deadline, and every node watches the cluster's
// keys (WithRequireLeader) and pushes the members to protoactor's member
// list whenever they change. Then:
//
//   - a graceful leave revokes the lease: the others drop the node at once;
//   - a crashed, frozen or cut-off node is dropped when its lease expires;
//   - a process restarted on the address of one that crashed replaces the
//     old registration at once (the newest registration of an address
//     wins; the old key waits for its lease);
//   - [Provider.CutOff] tells a node that no renewal within its lease has
//     succeeded, so the others have dropped it: the master's lease guard
//     lets go of the journal lease then, as with seed membership;
//   - after an etcd outage the node comes back by itself: a renewal that
//     finds the lease gone (expired meanwhile, or etcd lost its data)
//     registers again under a new lease, and the first good renewal after
//     failures reads every key again and watches anew.
//
// [WithTLS] makes every connection to etcd use TLS (no plain fallback);
// when the first registration fails, a TLS handshake of the provider's own
// says what the TLS problem is (unknown CA, refused client certificate, a
// plain-text etcd, or a TLS-only etcd reached in plain text).
//
// Members that leave protoactor's member list and come back are handed to
// it under a fresh alias (package membership/internal/alias, shared with
// the seed provider): protoactor blocks the id of a member that left.
//
// # Why not protoactor-go's own etcd provider
//
// At the pinned protoactor-go version its etcd provider
// (cluster/clusterproviders/etcd) pushes raw member ids, so a member whose
// lease expired during a partition stays blocked by every other node once
// it registers again; it does not register again after an etcd outage
// longer than the lease (protoactor-go issue #1133); nothing tells a node
// that it is cut off (the master's lease guard needs that); its lease is
// fixed at 3 s; its loops use context.TODO, and a shutdown flag is shared
// between goroutines without synchronisation. This package is small, and
// its state (view.go) is pure and table-tested.
//
// # Usage
//
//	p, err := etcdmembers.New([]string{"10.0.0.5:2379"})
//	if err != nil { ... }
//	cfg := cluster.Configure("foreman", p, disthash.New(), remote.Configure(host, port))
//
// Tests start a real etcd per test with package etcdtest.
package etcdmembers
