package throttler

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
}

// GrantMessage encodes a grant for the wire.
func GrantMessage(permits []Permit, again time.Time) *messages.PermitGrant {
	g := &messages.PermitGrant{Permits: make([]*messages.PermitSpan, len(permits))}
	if !again.IsZero() {
		g.AgainUnixNano = again.UnixNano()
	}
	for i, p := range permits {
		g.Permits[i] = &messages.PermitSpan{NotBeforeUnixNano: p.NotBefore.UnixNano(), NotAfterUnixNano: p.NotAfter.UnixNano()}
	}
	return g
}

// GrantPermits decodes a grant: the permits and the hint of when to ask
// again (zero when none was given).
func GrantPermits(g *messages.PermitGrant) (permits []Permit, again time.Time) {
	permits = make([]Permit, len(g.GetPermits()))
	for i, p := range g.GetPermits() {
		permits[i] = Permit{NotBefore: time.Unix(0, p.GetNotBeforeUnixNano()), NotAfter: time.Unix(0, p.GetNotAfterUnixNano())}
	}
	if n := g.GetAgainUnixNano(); n != 0 {
		again = time.Unix(0, n)
	}
	return permits, again
}
