package core

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/route"
)

// TestShardOfIsRoutes: the core rejects work of another shard by the same
// hash the nodes route with.
func TestShardOfIsRoutes(t *testing.T) {
	t.Parallel()
	for n := 1; n <= 7; n++ {
		for i := range 200 {
			id := "job-" + strconv.Itoa(i)
			require.Equal(t, route.ShardOf(id, n), shardOf(id, n), "%s of %d", id, n)
		}
	}
}
