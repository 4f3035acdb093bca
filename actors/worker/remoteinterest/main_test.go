package remoteinterest_test

import (
	"testing"

	"github.com/foreman-actors/foreman/actors/testkit"
)

// The blip test makes protoactor fail a connection attempt, and its
// endpoint writer then dials again without closing the gRPC client
// connection of the failed attempt (remote/endpoint_writer.go
// initialize/initializeInternal overwrite state.conn): that connection's
// goroutines outlive the test process's actor systems, as those of a
// crashed member's survivors do (see testkit.CrashLeakIgnores).
func TestMain(m *testing.M) { testkit.VerifyTestMain(m, testkit.CrashLeakIgnores...) }
