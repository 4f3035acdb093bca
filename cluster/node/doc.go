// Package node starts Foreman nodes: the whole system in one process
// ([StartLocal], what `foreman` with no port runs, and the way to embed
// Foreman in a Go program) or one node of a cluster ([StartCluster]: a
// backend that may host the singleton master, a frontend, or a worker node),
// chosen by port as in the Akka sample ([ParsePort], [RoleForPort]).
//
// In a cluster the master is a protoactor virtual actor of kind
// [MasterKind], registered only on backend nodes; a keep-alive on every
// backend makes sure it is active on its owner soon after a membership
// change, and the journal's epoch fence makes an activation that lost its
// place stop. [MasterLocator] finds it from any node ([MasterLocator.Route]
// is the route.Master that the node's workers and frontend client use; a
// master that cannot be found is route.ErrNoMaster). Results are published
// on the [ResultsTopic] pub-sub topic.
//
// [WithRateLimits] (ClusterConfig.RateLimits on a cluster) and
// [NewAdaptivePool] wire the throttler and the adaptive scheduler into the
// distributed workers; [ClusterNode.SetRate] and [ClusterNode.Rates] change
// and read the throttlers at run time (docs/rates.md).
package node
