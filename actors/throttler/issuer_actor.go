package throttler

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/messages"
)

// IssuerProps returns the props of the actor that owns a job type's
// cluster-wide rate: it answers each *messages.PermitRequest with a
// *messages.PermitGrant from an [Issuer] for rate. The Issuer is made when
// the actor starts, so an activation that replaces one on a dead node holds
// off as Issuer documents (no grant for one period in ModeTimer) and the
// rate holds across the failover. jobType names the type the actor limits;
// a request for another type is answered with an error. The options are
// checked here, so a bad rate fails before any actor is spawned.
func IssuerProps(jobType string, rate Rate, clk clock.Clock, opts ...IssuerOption) (*actor.Props, error) {
	if clk == nil {
		clk = clock.Real
	}
	if jobType == "" {
		return nil, fmt.Errorf("%w: an issuer needs a job type", ErrInvalidOption)
	}
	if _, err := NewIssuer(rate, clk.Now(), opts...); err != nil {
		return nil, err
	}
	var cfg issuerConfig
	for _, o := range opts {
		_ = o(&cfg) // checked by NewIssuer above
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &issuerActor{jobType: jobType, rate: rate, clock: clk, opts: opts, log: cfg.log}
	}), nil
}

// issuerActor is the thin shell around an Issuer.
type issuerActor struct {
	jobType string
	rate    Rate
	clock   clock.Clock
	opts    []IssuerOption
	issuer  *Issuer
	log     *slog.Logger // nil: the actor system's
}

// Receive implements actor.Actor.
func (a *issuerActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		// Checked by IssuerProps with the same rate and options.
		a.issuer, _ = NewIssuer(a.rate, a.clock.Now(), a.opts...)
		// Where the type's throttler runs is an operator's first question
		// when a rate looks wrong, and the cluster places it: say so once.
		if a.log == nil {
			a.log = c.ActorSystem().Logger()
		}
		a.log.Info("throttler started", "job_type", a.jobType, "rate", a.rate.String(), "address", c.ActorSystem().Address())
	case *messages.PermitRequest:
		c.Respond(a.grant(m))
	}
}

func (a *issuerActor) grant(m *messages.PermitRequest) *messages.PermitGrant {
	if m.GetJobType() != a.jobType {
		return &messages.PermitGrant{Error: fmt.Sprintf("throttler: this issuer limits job type %q, not %q", a.jobType, m.GetJobType())}
	}
	permits, again := a.issuer.Grant(a.clock.Now(), int(m.GetWant()))
	return GrantMessage(permits, again)
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
