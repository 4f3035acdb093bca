package httpapi

import (
	"context"
	"slices"

	"github.com/asynkron/protoactor-go/cluster"

	"github.com/foreman-actors/foreman/cluster/membership"
)

// ClusterMembers lists the members of a protoactor cluster for /status, as
// membership.Members sees them (members, then the clients its provider
// knows). The member hosting the master is marked by [ActorBackend.Status],
// which matches its address with the master's.
func ClusterMembers(c *cluster.Cluster) MembersFunc {
	return func(context.Context) ([]Member, error) {
		ms := membership.Members(c)
		out := make([]Member, len(ms))
		for i, m := range ms {
			out[i] = MemberFromMembership(m)
		}
		return out, nil
	}
}

// MemberFromMembership converts a membership.Member into the API's Member.
func MemberFromMembership(m membership.Member) Member {
	return Member{
		ID:      m.ID,
		Address: m.Address,
		Roles:   []string{m.Role},
		Kinds:   slices.Clone(m.Kinds),
		Client:  m.Client,
		Self:    m.Self,
	}
}
