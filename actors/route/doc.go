// Package route says where the master is: [Master] is the one value that
// the Worker, the Frontend, the Client, the cluster node and the HTTP API
// pass around to reach it, and [ErrNoMaster] is the one error they return
// when it cannot be reached.
//
// A route is either fixed ([Fixed]: one process, the master's PID is known)
// or resolved ([Resolver]: the cluster, where the singleton master moves
// between backend nodes and a function such as cluster/node's
// MasterLocator.Resolve finds its current PID). Callers ask [Master.Resolve]
// before they talk to the master and ask again when it seems gone.
//
// # Sharding
//
// Work is spread over N masters (shards master/0..N-1, see [ShardName]),
// chosen by a stable hash of the work id ([ShardOf]). [Sharded] makes one
// route of the shards' routes: the frontend routes each Work and each
// question about a work id with [Master.ForWork]; status queries and
// workers address every shard through [Master.Shard]. With N=1 the route
// is the unsharded one, unchanged.
//
// # Example
//
//	props, err := worker.Props(route.Fixed(masterPID), reg)
//	client, err := frontend.NewClient(sys, route.Resolver(locator.Resolve))
//	_, err = client.MasterStatus(ctx)
//	if errors.Is(err, route.ErrNoMaster) { ... } // retry later
package route
