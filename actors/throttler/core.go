package throttler

import (
	"time"

	"github.com/foreman-actors/foreman/actors/throttler/core"
	"github.com/foreman-actors/foreman/messages"
)

// The throttler's decisions live in actors/throttler/core, which is
// protoactor-free so that other cores (the master's per-key rates) decide
// with the same code. These names keep this package's API: they are the
// core's, not copies.

type (
	// Rate is core.Rate: Calls per Per.
	Rate = core.Rate
	// Mode is core.Mode.
	Mode = core.Mode
	// Overflow is core.Overflow.
	Overflow = core.Overflow
	// Limiter is core.Limiter, the strict rate limit as a plain value.
	Limiter = core.Limiter
	// FSM is core.FSM, seed 002's state machine.
	FSM[T comparable, M any] = core.FSM[T, M]
	// Effects is core.Effects.
	Effects[T comparable, M any] = core.Effects[T, M]
	// State is core.State.
	State = core.State
	// TimerOp is core.TimerOp.
	TimerOp = core.TimerOp
	// Stats is core.Stats.
	Stats = core.Stats
	// Permit is core.Permit.
	Permit = core.Permit
	// PermitUse is core.PermitUse.
	PermitUse = core.PermitUse
	// PermitCore is core.PermitCore, the permit throttler's pure core.
	PermitCore[S comparable] = core.PermitCore[S]
	// PermitStep is core.PermitStep.
	PermitStep[S comparable] = core.PermitStep[S]
	// PermitGrantTo is core.PermitGrantTo.
	PermitGrantTo[S comparable] = core.PermitGrantTo[S]
	// PermitStatus is core.PermitStatus.
	PermitStatus = core.PermitStatus
	// PermitCoreOption is core.PermitCoreOption.
	PermitCoreOption = core.PermitCoreOption
)

// The core's constants, under this package's names.
const (
	ModeTimer          = core.ModeTimer
	ModeSlidingWindow  = core.ModeSlidingWindow
	ModeTokenBucket    = core.ModeTokenBucket
	OverflowReject     = core.OverflowReject
	OverflowDropOldest = core.OverflowDropOldest
	OverflowDropNewest = core.OverflowDropNewest
	DefaultMode        = core.DefaultMode
	DefaultBurst       = core.DefaultBurst
	DefaultMaxQueue    = core.DefaultMaxQueue
	DefaultOverflow    = core.DefaultOverflow
	MaxStrictCalls     = core.MaxStrictCalls
	StateIdle          = core.StateIdle
	StateActive        = core.StateActive
	TimerNone          = core.TimerNone
	TimerStartPeriodic = core.TimerStartPeriodic
	TimerStartOnce     = core.TimerStartOnce
	TimerStop          = core.TimerStop
	DefaultPermitQueue = core.DefaultPermitQueue
	StrictSlices       = core.StrictSlices
)

// The core's errors; match them with errors.Is.
var (
	ErrInvalidRate   = core.ErrInvalidRate
	ErrInvalidOption = core.ErrInvalidOption
	ErrQueueFull     = core.ErrQueueFull
)

// PerSecond is core.PerSecond.
func PerSecond(calls int) Rate { return core.PerSecond(calls) }

// PerMinute is core.PerMinute.
func PerMinute(calls int) Rate { return core.PerMinute(calls) }

// PerHour is core.PerHour.
func PerHour(calls int) Rate { return core.PerHour(calls) }

// ParseMode is core.ParseMode.
func ParseMode(s string) (Mode, error) { return core.ParseMode(s) }

// NewPermitCore is core.NewPermitCore.
func NewPermitCore[S comparable](jobType string, rate Rate, strict bool, opts ...PermitCoreOption) (*PermitCore[S], error) {
	return core.NewPermitCore[S](jobType, rate, strict, opts...)
}

// PermitSlices is core.PermitSlices.
func PermitSlices(n int) PermitCoreOption { return core.PermitSlices(n) }

// StrictValidity is core.StrictValidity.
func StrictValidity(r Rate) time.Duration { return core.StrictValidity(r) }

// StrictLead is core.StrictLead.
func StrictLead(r Rate) time.Duration { return core.StrictLead(r) }

// GrantMessage is core.GrantMessage.
func GrantMessage(permits []Permit, again time.Time) *messages.PermitGrant {
	return core.GrantMessage(permits, again)
}

// GrantPermits is core.GrantPermits.
func GrantPermits(g *messages.PermitGrant) (permits []Permit, again time.Time) {
	return core.GrantPermits(g)
}

// UsedMessage is core.UsedMessage.
func UsedMessage(jobType string, pool uint64, uses []PermitUse) *messages.PermitUsed {
	return core.UsedMessage(jobType, pool, uses)
}

// UsedReports is core.UsedReports.
func UsedReports(m *messages.PermitUsed) []PermitUse { return core.UsedReports(m) }
