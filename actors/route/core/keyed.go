package core

import "strconv"

// KeyedID returns an id for a work routed by key (a unique or
// concurrency key, see the master core's keys.go) among n shards: base
// itself when it falls on key's shard, else base with the first suffix
// "~1", "~2", ... that does (about n tries). The id then routes by
// ShardOf like any other, so GET /work/{id}, the result feed and the
// workers need nothing new, and every work of one key is on one master.
func KeyedID(base, key string, n int) string {
	if n < 2 || key == "" {
		return base
	}
	want := ShardOf(key, n)
	if ShardOf(base, n) == want {
		return base
	}
	for i := 1; ; i++ {
		if id := base + "~" + strconv.Itoa(i); ShardOf(id, n) == want {
			return id
		}
	}
}
