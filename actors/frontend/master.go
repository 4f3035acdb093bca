package frontend

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/worker"
)

// MasterRef says how to reach the master: a fixed PID or a resolver for the
// cluster. It is the worker package's type, so one value serves both.
type MasterRef = worker.MasterRef

// MasterPID returns a reference to a master at a fixed PID.
func MasterPID(pid *actor.PID) MasterRef { return worker.MasterPID(pid) }

// MasterResolver returns a reference that finds the master by calling fn
// (bounded by the ask timeout) before each attempt.
func MasterResolver(fn func(ctx context.Context) (*actor.PID, error)) MasterRef {
	return worker.MasterResolver(fn)
}
