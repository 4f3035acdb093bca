package etcdmembers

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/cluster/membership"
)

// Key layout under the prefix (default "/foreman") and the cluster name:
//
//	<prefix>/<cluster>/members/<id>  a member (backend), bound to its lease
//	<prefix>/<cluster>/clients/<id>  a client (frontend, worker), for status pages
const (
	membersDir = "members/"
	clientsDir = "clients/"
)

// record is the value of a registration key.
type record struct {
	ID    string   `json:"id"`
	Host  string   `json:"host"`
	Port  int      `json:"port"`
	Kinds []string `json:"kinds,omitempty"`
}

// entry is one registration as this node read it.
type entry struct {
	key    string
	node   membership.Node
	client bool
	rev    int64 // the key's create revision: a newer registration wins an address
}

// decode reads a registration key and value under dir (the cluster's
// directory, ending in "/").
func decode(dir, key string, value []byte, createRev int64) (entry, error) {
	rest, ok := strings.CutPrefix(key, dir)
	if !ok {
		return entry{}, fmt.Errorf("key %q is not under %q", key, dir)
	}
	var client bool
	switch {
	case strings.HasPrefix(rest, membersDir):
	case strings.HasPrefix(rest, clientsDir):
		client = true
	default:
		return entry{}, fmt.Errorf("key %q is neither a member nor a client", key)
	}
	var r record
	if err := json.Unmarshal(value, &r); err != nil {
		return entry{}, fmt.Errorf("key %q: bad registration: %w", key, err)
	}
	if r.ID == "" || r.Host == "" || r.Port <= 0 {
		return entry{}, fmt.Errorf("key %q: registration without id, host or port", key)
	}
	return entry{key: key, node: membership.Node{ID: r.ID, Host: r.Host, Port: r.Port, Kinds: r.Kinds}, client: client, rev: createRev}, nil
}

// encode returns the registration key and value of self.
func encode(dir string, self membership.Node, member bool) (key string, value []byte) {
	sub := clientsDir
	if member {
		sub = membersDir
	}
	// Encoding a struct of strings and ints cannot fail.
	value, _ = json.Marshal(record{ID: self.ID, Host: self.Host, Port: self.Port, Kinds: self.Kinds})
	return dir + sub + self.ID, value
}

// view is what one node knows of the registrations of its cluster: pure
// state, no etcd, no clock. The shell feeds it the keys it reads and
// watches and pushes [view.members] to protoactor when [view.settle]
// reports a change.
type view struct {
	self    membership.Node
	member  bool
	entries map[string]entry // by key
	last    []membership.Node
}

func newView(self membership.Node, member bool) *view {
	return &view{self: self, member: member, entries: make(map[string]entry)}
}

// reset replaces every entry (a full read of the cluster's keys).
func (v *view) reset(es []entry) {
	v.entries = make(map[string]entry, len(es))
	for _, e := range es {
		v.entries[e.key] = e
	}
}

// put adds or replaces the entry of one key.
func (v *view) put(e entry) { v.entries[e.key] = e }

// remove drops the entry of a key (deleted: its lease expired or was
// revoked).
func (v *view) remove(key string) { delete(v.entries, key) }

// members returns the alive members, this node included when it is a
// member, sorted by id. One address holds one member: a process restarted
// on the address of one that crashed registers while the old key waits for
// its lease to expire, and the newer registration wins at once (the old
// process is gone: two processes cannot listen on one address).
func (v *view) members() []membership.Node {
	byAddr := make(map[string]entry)
	for _, e := range v.entries {
		if e.client {
			continue
		}
		a := e.node.Address()
		if old, ok := byAddr[a]; !ok || e.rev > old.rev {
			byAddr[a] = e
		}
	}
	out := make([]membership.Node, 0, len(byAddr)+1)
	if v.member {
		delete(byAddr, v.self.Address())
		out = append(out, v.self)
	}
	for _, e := range byAddr {
		if e.node.ID != v.self.ID {
			out = append(out, e.node)
		}
	}
	sortByID(out)
	return out
}

// clients returns the registered clients but this node, sorted by id.
func (v *view) clients() []membership.Node {
	var out []membership.Node
	for _, e := range v.entries {
		if e.client && e.node.ID != v.self.ID {
			out = append(out, e.node)
		}
	}
	sortByID(out)
	return out
}

// change is what happened to the member list since it was last settled.
type change struct {
	joined, left []membership.Node
}

func (c change) changed() bool { return len(c.joined) > 0 || len(c.left) > 0 }

// settle returns the members and how they differ from the list settled
// last, and records them as settled.
func (v *view) settle() ([]membership.Node, change) {
	now := v.members()
	var ch change
	for _, n := range now {
		if !containsID(v.last, n.ID) {
			ch.joined = append(ch.joined, n)
		}
	}
	for _, n := range v.last {
		if !containsID(now, n.ID) {
			ch.left = append(ch.left, n)
		}
	}
	v.last = now
	return now, ch
}

// cutOff reports whether a registration last renewed at lastRenew, under
// a lease of granted, has expired in etcd by now: the other nodes have
// dropped this one (or will any moment), and it must let go of what only
// one node may hold. A node that never registered is not cut off.
func cutOff(now, lastRenew time.Time, granted time.Duration) bool {
	return !lastRenew.IsZero() && now.Sub(lastRenew) >= granted
}

func containsID(ns []membership.Node, id string) bool {
	return slices.ContainsFunc(ns, func(n membership.Node) bool { return n.ID == id })
}

func sortByID(ns []membership.Node) {
	slices.SortFunc(ns, func(a, b membership.Node) int { return strings.Compare(a.ID, b.ID) })
}
