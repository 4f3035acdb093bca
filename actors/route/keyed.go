package route

import "github.com/foreman-actors/foreman/actors/route/core"

// KeyedID returns an id for a work with a unique or concurrency key among
// n shards: base when it falls on the key's shard, else base with a
// suffix ("~1", "~2", ...) that does. A master rejects a keyed work whose
// id is on another shard than its key's (every work of a key must be on
// one master for the key to be the cluster's); the HTTP API picks such ids
// when the client gives none. It is core.KeyedID.
func KeyedID(base, key string, n int) string { return core.KeyedID(base, key, n) }
