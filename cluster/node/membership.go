package node

import (
	"crypto/x509"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/cluster"

	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/membership/etcdmembers"
	"github.com/foreman-actors/foreman/cluster/tlsconf"
)

// Membership URLs.
const (
	// MembershipSeeds is the default membership: Akka-style seed nodes
	// (package membership), no extra service.
	MembershipSeeds = "seeds"
	// MembershipHelp describes the accepted membership URLs.
	MembershipHelp = "seeds, or etcd://host:port[,host:port] (the etcd cluster's client endpoints)"
)

// Membership is a parsed membership URL: seed nodes, or the endpoints of
// an etcd cluster.
type Membership struct {
	// Etcd holds the etcd client endpoints host:port; empty for seeds.
	Etcd []string
}

// IsEtcd reports whether the membership is etcd's.
func (m Membership) IsEtcd() bool { return len(m.Etcd) > 0 }

// String returns the URL: "seeds" or "etcd://h:p[,h:p]".
func (m Membership) String() string {
	if !m.IsEtcd() {
		return MembershipSeeds
	}
	return "etcd://" + strings.Join(m.Etcd, ",")
}

// ParseMembership parses a membership URL ([MembershipHelp]; empty means
// seeds). Errors wrap ErrInvalidConfig and say what is accepted.
func ParseMembership(s string) (Membership, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == MembershipSeeds {
		return Membership{}, nil
	}
	rest, ok := strings.CutPrefix(s, "etcd://")
	if !ok {
		return Membership{}, fmt.Errorf("%w: membership %q: want %s", ErrInvalidConfig, s, MembershipHelp)
	}
	if i := strings.IndexAny(rest, "/?#@"); i >= 0 {
		return Membership{}, fmt.Errorf("%w: membership %q: only host:port endpoints separated by commas may follow etcd:// (no path, query or user; the node's TLS material decides TLS)", ErrInvalidConfig, s)
	}
	var eps []string
	for ep := range strings.SplitSeq(rest, ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			eps = append(eps, ep)
		}
	}
	// etcdmembers checks each endpoint and adds the default port.
	p, err := etcdmembers.New(eps)
	if err != nil {
		return Membership{}, fmt.Errorf("%w: membership %q: %w", ErrInvalidConfig, s, err)
	}
	return Membership{Etcd: strings.Split(strings.TrimPrefix(p.URL(), "etcd://"), ",")}, nil
}

// MembershipOption configures [NewMembership].
type MembershipOption func(*membershipConfig)

type membershipConfig struct {
	etcdCA *x509.CertPool // nil: the cluster CA verifies etcd
}

// WithEtcdCA makes the etcd client verify etcd's server certificate with
// pool instead of the cluster CA, for an etcd whose certificate another CA
// signed. The node still presents its own certificate, so etcd must trust
// the cluster CA for client certificates. It needs etcd membership and the
// node's TLS material; otherwise NewMembership returns ErrInvalidConfig.
func WithEtcdCA(pool *x509.CertPool) MembershipOption {
	return func(c *membershipConfig) { c.etcdCA = pool }
}

// NewMembership returns the membership provider of a cluster node for the
// URL ([ParseMembership]): the seed provider with seeds (host:port of
// backend nodes), or the etcd provider. host is the interface the node
// binds (the seed provider's endpoint listens there). With the node's TLS
// material (nil: plain), the seed provider serves and probes over mutual
// TLS and the etcd client presents the node certificate and trusts only
// the cluster CA (or the pool of [WithEtcdCA]); there is no plain
// fallback. Every line the etcd provider logs to log carries
// tls=true|false.
func NewMembership(url string, seeds []string, host string, log *slog.Logger, tlsm *tlsconf.Material, opts ...MembershipOption) (cluster.ClusterProvider, error) {
	var mc membershipConfig
	for _, o := range opts {
		o(&mc)
	}
	m, err := ParseMembership(url)
	if err != nil {
		return nil, err
	}
	if mc.etcdCA != nil && (tlsm == nil || !m.IsEtcd()) {
		return nil, fmt.Errorf("%w: WithEtcdCA needs etcd membership and the node's TLS material (membership %s, TLS %t)", ErrInvalidConfig, m, tlsm != nil)
	}
	if m.IsEtcd() {
		var eopts []etcdmembers.Option
		if log != nil {
			eopts = append(eopts, etcdmembers.WithLogger(log.With("tls", tlsm != nil)))
		}
		if tlsm != nil {
			cfg := tlsm.ClientConfig()
			if mc.etcdCA != nil {
				cfg.RootCAs = mc.etcdCA
			}
			eopts = append(eopts, etcdmembers.WithTLS(cfg))
		}
		p, err := etcdmembers.New(m.Etcd, eopts...)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		return p, nil
	}
	mopts := []membership.Option{membership.WithSeeds(seeds...), membership.WithBindHost(host), membership.WithLogger(log)}
	if tlsm != nil {
		mopts = append(mopts, membership.WithTLS(tlsm))
	}
	p, err := membership.New(mopts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return p, nil
}

// dropReporter is a membership provider that says how long after a crash
// the others drop a node (etcdmembers.Provider: its lease).
type dropReporter interface{ DropAfter() time.Duration }

// silenceReporter is a membership provider that says how long a node may
// be silent (paused, overloaded) before the others drop it
// (membership.Provider).
type silenceReporter interface{ Silence() time.Duration }

// masterLeaseFor returns the master's journal lease for a membership
// provider: half the time the membership takes to drop a node that stopped
// renewing (etcd), two fifths of the time it takes to drop one that went
// silent (seed membership), else the
// master's default. A successor is activated only once the membership has
// dropped the old owner, so a lease shorter than that costs a crash
// failover little, and a longer one rides out a slow journal renewal on a
// loaded machine instead of stepping down. With seed membership the
// master's default (300 ms) did not: on a loaded 2-core machine a renewal
// behind a slow journal for 300 ms made the master step down and take a
// new epoch on the same node (TestPartitionNetns: 3 epochs in a phase
// that needs 2), while the membership, which rides out 1 s of silence,
// kept every node. The seed membership's share is two fifths, 400 ms of
// its 1 s (issue 34 item 5): a crash failover waits for what is left of
// the dead master's lease, and half (500 ms) made that 481 ms median, over
// the 450 ms target; 400 ms still rides out a renewal stalled for 390 ms
// (the lease less its drift margin, persistence.WithLease), above the
// 300 ms stall seen.
func masterLeaseFor(p cluster.ClusterProvider) (time.Duration, bool) {
	if d, ok := p.(dropReporter); ok && d.DropAfter() > 0 {
		return d.DropAfter() / 2, true
	}
	if s, ok := p.(silenceReporter); ok && s.Silence() > 0 {
		return s.Silence() * 2 / 5, true
	}
	return 0, false
}
