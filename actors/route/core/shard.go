package core

import (
	"hash/fnv"
	"strconv"
)

// ShardOf returns the shard (0..n-1) that owns workID: FNV-1a (32 bit) of
// the id modulo n. It is the one mapping of work ids to shards in Foreman
// (route.ShardOf forwards here) and it must never change: a journal
// written with it holds each work in the stream this returns. n < 2 is
// one shard.
func ShardOf(workID string, n int) int {
	if n < 2 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(workID)) // never fails
	return int(h.Sum32() % uint32(n))
}

// ShardName returns the name of shard k of n: its cluster identity and its
// journal stream. With one shard it is base unchanged ("master"), so an
// unsharded cluster's identities and journal stay as they were; with more
// it is base/k ("master/0" .. "master/N-1").
func ShardName(base string, k, n int) string {
	if n < 2 {
		return base
	}
	return base + "/" + strconv.Itoa(k)
}

// ShardKind returns the cluster kind of shard k's master of n, given the
// master's kind base (cluster/node's MasterKind, "master"): base itself
// with one shard, base-k with more (each shard its own kind, so that
// placement spreads the shards over the backends). It mirrors
// cluster/node.ShardKind, which the simulator may not import; with
// ShardName and Owner it places shard k's master as the cluster does:
// Owner(members, ShardKind("master", k, n), ShardName("master", k, n)).
func ShardKind(base string, k, n int) string {
	if n < 2 {
		return base
	}
	return base + "-" + strconv.Itoa(k)
}
