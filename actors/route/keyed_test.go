package route_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/route"
)

// TestKeyedID: the id falls on its key's shard, is the base when the base
// does, and is the same every time.
func TestKeyedID(t *testing.T) {
	t.Parallel()
	require.Equal(t, "job-1", route.KeyedID("job-1", "tenant-a", 1), "one shard: unchanged")
	require.Equal(t, "job-1", route.KeyedID("job-1", "", 8), "no key: unchanged")
	for n := 2; n <= 16; n++ {
		for i := range 50 {
			base, key := fmt.Sprint("job-", i), fmt.Sprint("key-", i*7)
			id := route.KeyedID(base, key, n)
			require.Equal(t, route.ShardOf(key, n), route.ShardOf(id, n))
			require.Equal(t, id, route.KeyedID(base, key, n))
			if route.ShardOf(base, n) == route.ShardOf(key, n) {
				require.Equal(t, base, id)
			}
		}
	}
}
