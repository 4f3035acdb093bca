package node_test

import (
	"log/slog"
	"testing"

	"github.com/foreman-actors/foreman/actors/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m, clusterLeakIgnores...) }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
