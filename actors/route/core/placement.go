package core

import (
	"slices"
	"strings"
)

// Member is one cluster member as a topology names it: its incarnation id
// (a restarted process has a new one), its remote address host:port, and
// the cluster kinds it hosts (backends host the masters' kinds; frontends
// and workers none).
type Member struct {
	ID      string
	Address string
	Kinds   []string
}

// HasKind reports whether m hosts kind.
func (m Member) HasKind(kind string) bool { return slices.Contains(m.Kinds, kind) }

// Owner returns the address of the member that protoactor's rendezvous
// hashing places kind/identity on among members, or "" when none hosts
// kind: the member whose FNV-1a 32 of identity+address scores highest, the
// first of equal scores in the order of ids descending (the order the
// pinned protoactor sorts a topology in). A score of 0 never wins, as in
// protoactor. The answer does not depend on the order of members.
func Owner(members []Member, kind, identity string) string {
	hosts := make([]Member, 0, len(members))
	for _, m := range members {
		if m.HasKind(kind) {
			hosts = append(hosts, m)
		}
	}
	switch len(hosts) {
	case 0:
		return ""
	case 1:
		return hosts[0].Address
	}
	// protoactor sorts with sort.Slice (not stable) by id descending; ids
	// are unique in a topology, so the order is determined.
	slices.SortStableFunc(hosts, func(a, b Member) int { return strings.Compare(b.ID, a.ID) })
	var (
		best  uint32
		owner string
	)
	for _, m := range hosts {
		if s := score(identity, m.Address); s > best {
			best, owner = s, m.Address
		}
	}
	return owner
}

// score is FNV-1a 32 over identity then address, without allocating.
func score(identity, address string) uint32 {
	const (
		offset = 2166136261
		prime  = 16777619
	)
	h := uint32(offset)
	for i := range len(identity) {
		h ^= uint32(identity[i])
		h *= prime
	}
	for i := range len(address) {
		h ^= uint32(address[i])
		h *= prime
	}
	return h
}
