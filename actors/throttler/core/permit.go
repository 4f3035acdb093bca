package core

import (
	"time"

	"github.com/foreman-actors/foreman/messages"
)

// Permit is the right to hand out one unit of rate-limited work at any time t
// with NotBefore <= t <= NotAfter. A throttler (PermitThrottlerProps) grants
// permits to remote callers (the master shards of a cluster), which spend
// them locally; a permit not spent by NotAfter is lost, never carried over.
//
// Times are absolute and read from the throttler's clock: the guarantee
// holds across processes only as far as their clocks agree (skew adds to
// the bound).
type Permit struct {
	// NotBefore is the earliest time the permit may be spent.
	NotBefore time.Time
	// NotAfter is the latest time the permit may be spent.
	NotAfter time.Time
	// Seq numbers a strict-mode permit over its throttler's stream; its
	// pool reports when it spent it (or that it expired) by this number.
	// Zero (timer mode): nothing is reported.
	Seq uint64
}

// GrantMessage encodes a grant for the wire.
func GrantMessage(permits []Permit, again time.Time) *messages.PermitGrant {
	g := &messages.PermitGrant{Permits: make([]*messages.PermitSpan, len(permits))}
	if !again.IsZero() {
		g.AgainUnixNano = again.UnixNano()
	}
	for i, p := range permits {
		g.Permits[i] = &messages.PermitSpan{NotBeforeUnixNano: p.NotBefore.UnixNano(), NotAfterUnixNano: p.NotAfter.UnixNano(), Seq: p.Seq}
	}
	return g
}

// GrantPermits decodes a grant: the permits and the hint of when to ask
// again (zero when none was given).
func GrantPermits(g *messages.PermitGrant) (permits []Permit, again time.Time) {
	permits = make([]Permit, len(g.GetPermits()))
	for i, p := range g.GetPermits() {
		permits[i] = Permit{NotBefore: time.Unix(0, p.GetNotBeforeUnixNano()), NotAfter: time.Unix(0, p.GetNotAfterUnixNano()), Seq: p.GetSeq()}
	}
	if n := g.GetAgainUnixNano(); n != 0 {
		again = time.Unix(0, n)
	}
	return permits, again
}

// PermitUse is what became of one strict permit, as its pool reports it:
// spent at Spent, or expired unspent (Spent is the zero time).
type PermitUse struct {
	Seq   uint64
	Spent time.Time
}

// UsedMessage encodes the reports of pool for the wire.
func UsedMessage(jobType string, pool uint64, uses []PermitUse) *messages.PermitUsed {
	m := &messages.PermitUsed{JobType: jobType, Pool: pool, Uses: make([]*messages.PermitUse, len(uses))}
	for i, u := range uses {
		m.Uses[i] = &messages.PermitUse{Seq: u.Seq}
		if !u.Spent.IsZero() {
			m.Uses[i].SpentUnixNano = u.Spent.UnixNano()
		}
	}
	return m
}

// UsedReports decodes a pool's reports.
func UsedReports(m *messages.PermitUsed) []PermitUse {
	uses := make([]PermitUse, len(m.GetUses()))
	for i, u := range m.GetUses() {
		uses[i].Seq = u.GetSeq()
		if n := u.GetSpentUnixNano(); n != 0 {
			uses[i].Spent = time.Unix(0, n)
		}
	}
	return uses
}
