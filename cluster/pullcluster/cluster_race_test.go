//go:build race

package pullcluster_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestClusterEpicSurvivesMasterMemberKill runs only without the race
// detector; see cluster_test.go for why, and .ci/run for the run that
// includes it.
func TestClusterEpicSurvivesMasterMemberKill(t *testing.T) {
	t.Skip("SKIPPED UNDER -race: protoactor-go's own data races make in-process cluster tests fail on library code; run: go test -count=1 -run TestCluster ./cluster/pullcluster/")
}

// clusterLeakIgnores is empty: the cluster tests do not run under -race.
var clusterLeakIgnores []goleak.Option

// TestClusterEpicSurvivesMasterProcessKill runs only without the race
// detector, with the other cluster tests (its client node is a protoactor
// cluster node in this process).
func TestClusterEpicSurvivesMasterProcessKill(t *testing.T) {
	t.Skip("SKIPPED UNDER -race: see TestClusterEpicSurvivesMasterMemberKill; run: go test -count=1 -run TestCluster ./cluster/pullcluster/")
}
