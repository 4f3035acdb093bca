package pullcluster_test

import (
	"log/slog"
	"os"
	"testing"

	"github.com/foreman-actors/foreman/actors/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m, clusterLeakIgnores...) }

// testLogger drops logs, unless FOREMAN_TEST_LOG names a level (debug,
// info, warn, error): then they go to stderr, for debugging a test.
func testLogger() *slog.Logger {
	var level slog.Level
	if v := os.Getenv("FOREMAN_TEST_LOG"); v != "" && level.UnmarshalText([]byte(v)) == nil {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	}
	return slog.New(slog.DiscardHandler)
}
