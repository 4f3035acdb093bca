package master

import (
	"github.com/foreman-actors/foreman/actors/master/core"
	"github.com/foreman-actors/foreman/messages"
)

// The master's decisions live in package core; these names keep the
// public API they had here.

type (
	// WorkState is core.WorkState: the master's event-sourced state.
	WorkState = core.WorkState
	// Counts is core.Counts: a summary of a WorkState.
	Counts = core.Counts
	// Running is core.Running: a work in progress and its worker.
	Running = core.Running
	// Policy is core.Policy: what happens to a failed or timed-out work.
	Policy = core.Policy
	// DispatchLimiter is core.DispatchLimiter: it rate-limits the
	// hand-out of one job type.
	DispatchLimiter = core.DispatchLimiter
)

// Bounds of a ListWork answer (core.DefaultListLimit, core.MaxListLimit).
const (
	DefaultListLimit = core.DefaultListLimit
	MaxListLimit     = core.MaxListLimit
)

// NewWorkState returns an empty state (core.NewWorkState).
func NewWorkState() *WorkState { return core.NewWorkState() }

// RestoreWorkState rebuilds a state from a snapshot (core.RestoreWorkState).
func RestoreWorkState(snap *messages.MasterSnapshot) (*WorkState, error) {
	return core.RestoreWorkState(snap)
}
