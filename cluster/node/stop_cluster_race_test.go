//go:build race

package node_test

import "testing"

// TestClusterStopLookupInFlight runs only without the race detector; see
// cluster_test.go for why.
func TestClusterStopLookupInFlight(t *testing.T) {
	t.Skip("SKIPPED UNDER -race: protoactor-go's own data races make in-process cluster tests fail on library code; run: go test -count=1 -run TestCluster ./cluster/node/")
}
