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
// # Sharding (not built)
//
// Today there is one master, so Resolve takes no key. When work is spread
// over several masters (master/0..N-1, chosen by a stable hash of the work
// id), this package is where the key goes: a keyed constructor and a
// Resolve variant that takes the work id, so the frontend routes each Work
// to its shard while workers and status queries address every shard. The
// callers need no other package to change.
//
// # Example
//
//	props, err := worker.Props(route.Fixed(masterPID), reg)
//	client, err := frontend.NewClient(sys, route.Resolver(locator.Resolve))
//	_, err = client.MasterStatus(ctx)
//	if errors.Is(err, route.ErrNoMaster) { ... } // retry later
package route
