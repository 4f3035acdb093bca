package route

import "github.com/foreman-actors/foreman/actors/route/core"

// ShardOf returns the shard (0..n-1) that owns workID: FNV-1a (32 bit) of
// the id modulo n. It is the one mapping of work ids to shards in Foreman
// (the Go client, the frontends, GET /work/{id} and the result feed all
// use it through [Master.ForWork]), and it must never change: a journal
// written with it holds each work in the stream this returns. n < 2 is
// one shard. It is core.ShardOf, which the pure cores and the simulator
// use.
func ShardOf(workID string, n int) int { return core.ShardOf(workID, n) }

// ShardName returns the name of shard k of n: its cluster identity and its
// journal stream. With one shard it is base unchanged ("master"), so an
// unsharded cluster's identities and journal stay as they were; with more
// it is base/k ("master/0" .. "master/N-1").
func ShardName(base string, k, n int) string { return core.ShardName(base, k, n) }
