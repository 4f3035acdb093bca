package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
)

// ErrNoMaster is returned by MasterRef.Resolve when the reference is empty or
// the resolver found no master.
var ErrNoMaster = errors.New("worker: master not found")

// MasterRef says how to reach the master: a fixed PID (one process, part 1)
// or a resolver function (the cluster, part 2, where the singleton master
// moves between nodes). The zero value is invalid.
type MasterRef struct {
	pid     *actor.PID
	resolve func(ctx context.Context) (*actor.PID, error)
}

// MasterPID returns a reference to a master at a fixed PID.
func MasterPID(pid *actor.PID) MasterRef { return MasterRef{pid: pid} }

// MasterResolver returns a reference that finds the master by calling fn.
// Actors call fn off their own goroutine, re-resolve on every register tick
// and whenever the master seems gone (its PID terminated, a WorkIsDone went
// unacknowledged). fn must honour ctx.
func MasterResolver(fn func(ctx context.Context) (*actor.PID, error)) MasterRef {
	return MasterRef{resolve: fn}
}

// IsResolver reports whether the reference uses a resolver function.
func (m MasterRef) IsResolver() bool { return m.resolve != nil }

// Resolve returns the master's current PID: the fixed PID, or the resolver's
// answer. It blocks as long as the resolver does.
func (m MasterRef) Resolve(ctx context.Context) (*actor.PID, error) {
	if m.resolve != nil {
		pid, err := m.resolve(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoMaster, err)
		}
		if pid == nil {
			return nil, fmt.Errorf("%w: the resolver returned no PID", ErrNoMaster)
		}
		return pid, nil
	}
	if m.pid == nil {
		return nil, fmt.Errorf("%w: empty MasterRef; use MasterPID or MasterResolver", ErrNoMaster)
	}
	return m.pid, nil
}

// Validate reports whether the reference can be used.
func (m MasterRef) Validate() error {
	if m.pid == nil && m.resolve == nil {
		return fmt.Errorf("%w: empty MasterRef; use MasterPID(pid) or MasterResolver(fn)", ErrInvalidOption)
	}
	return nil
}
