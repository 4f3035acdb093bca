package etcdmembers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/membership"
)

const dir = "/foreman/c/"

func node(id string, port int) membership.Node {
	return membership.Node{ID: id, Host: "127.0.0.1", Port: port}
}

func reg(t *testing.T, n membership.Node, member bool, rev int64) entry {
	t.Helper()
	k, v := encode(dir, n, member)
	e, err := decode(dir, k, v, rev)
	require.NoError(t, err)
	return e
}

func ids(ns []membership.Node) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

func TestViewMembers(t *testing.T) {
	t.Parallel()
	self := node("self", 2551)
	tests := []struct {
		name        string
		member      bool
		regs        func(t *testing.T) []entry
		wantMembers []string
		wantClients []string
	}{
		{"a lone member sees itself before its key is read", true,
			func(*testing.T) []entry { return nil }, []string{"self"}, []string{}},
		{"a client is not a member", false,
			func(t *testing.T) []entry { return []entry{reg(t, node("b", 2552), true, 5)} }, []string{"b"}, []string{}},
		{"members and clients apart", true, func(t *testing.T) []entry {
			return []entry{reg(t, self, true, 1), reg(t, node("b", 2552), true, 2), reg(t, node("f", 3000), false, 3)}
		}, []string{"b", "self"}, []string{"f"}},
		{"restart on the same address: the newest registration wins", true, func(t *testing.T) []entry {
			return []entry{reg(t, node("old", 2552), true, 2), reg(t, node("new", 2552), true, 9)}
		}, []string{"new", "self"}, []string{}},
		{"newest wins whatever the order", true, func(t *testing.T) []entry {
			return []entry{reg(t, node("new", 2552), true, 9), reg(t, node("old", 2552), true, 2)}
		}, []string{"new", "self"}, []string{}},
		{"an old registration of this node's address is this node's predecessor", true, func(t *testing.T) []entry {
			return []entry{reg(t, node("mine-before", 2551), true, 1), reg(t, self, true, 7)}
		}, []string{"self"}, []string{}},
		{"this node as a client is not in its client list", false, func(t *testing.T) []entry {
			return []entry{reg(t, self, false, 1), reg(t, node("w", 4000), false, 2)}
		}, []string{}, []string{"w"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newView(self, tt.member)
			v.reset(tt.regs(t))
			require.Equal(t, tt.wantMembers, ids(v.members()))
			require.Equal(t, tt.wantClients, ids(v.clients()))
		})
	}
}

func TestViewSettle(t *testing.T) {
	t.Parallel()
	v := newView(node("self", 2551), true)
	_, ch := v.settle()
	require.Equal(t, []string{"self"}, ids(ch.joined), "first settle: this node joins")

	b := reg(t, node("b", 2552), true, 2)
	v.put(b)
	_, ch = v.settle()
	require.Equal(t, []string{"b"}, ids(ch.joined))
	require.Empty(t, ch.left)

	_, ch = v.settle()
	require.False(t, ch.changed(), "nothing new")

	v.put(reg(t, node("b2", 2552), true, 3)) // b restarted on its address
	_, ch = v.settle()
	require.Equal(t, []string{"b2"}, ids(ch.joined))
	require.Equal(t, []string{"b"}, ids(ch.left), "the old process is gone at once")

	v.remove(b.key) // its lease expires later: no change
	_, ch = v.settle()
	require.False(t, ch.changed())

	v.put(reg(t, node("f", 3000), false, 4))
	_, ch = v.settle()
	require.False(t, ch.changed(), "clients do not change the member list")

	v.reset(nil) // a full read after etcd lost its data
	members, ch := v.settle()
	require.Equal(t, []string{"self"}, ids(members))
	require.Equal(t, []string{"b2"}, ids(ch.left))
}

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, key, value string
		wantErr          string
	}{
		{"member", dir + "members/a", `{"id":"a","host":"h","port":1}`, ""},
		{"client", dir + "clients/a", `{"id":"a","host":"h","port":1}`, ""},
		{"other cluster", "/foreman/d/members/a", `{"id":"a","host":"h","port":1}`, "is not under"},
		{"unknown directory", dir + "other/a", `{"id":"a","host":"h","port":1}`, "neither a member nor a client"},
		{"bad JSON", dir + "members/a", `{`, "bad registration"},
		{"no port", dir + "members/a", `{"id":"a","host":"h"}`, "without id, host or port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := decode(dir, tt.key, []byte(tt.value), 1)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestCutOff(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name      string
		lastRenew time.Time
		now       time.Time
		want      bool
	}{
		{"never registered", time.Time{}, t0, false},
		{"just renewed", t0, t0, false},
		{"within the lease", t0, t0.Add(1999 * time.Millisecond), false},
		{"the lease ran out", t0, t0.Add(2 * time.Second), true},
		{"long gone", t0, t0.Add(time.Minute), true},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, cutOff(tt.now, tt.lastRenew, 2*time.Second), tt.name)
	}
}

func TestNewOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		eps     []string
		opts    []Option
		wantErr string
		wantURL string
	}{
		{"defaults", []string{"10.0.0.5:2379"}, nil, "", "etcd://10.0.0.5:2379"},
		{"default port", []string{"etcd1", "etcd2:12379"}, nil, "", "etcd://etcd1:2379,etcd2:12379"},
		{"IPv6", []string{"[::1]:2379"}, nil, "", "etcd://[::1]:2379"},
		{"no endpoint", nil, nil, "no etcd endpoint", ""},
		{"a URL instead of host:port", []string{"http://h:2379"}, nil, "not host:port", ""},
		{"bad port", []string{"h:99999"}, nil, "not 1-65535", ""},
		{"TTL under a second", []string{"h"}, []Option{WithTTL(500 * time.Millisecond)}, "WithTTL(500ms)", ""},
		{"TTL not whole seconds", []string{"h"}, []Option{WithTTL(1500 * time.Millisecond)}, "whole number of seconds", ""},
		{"start timeout", []string{"h"}, []Option{WithStartTimeout(0)}, "WithStartTimeout(0s)", ""},
		{"prefix", []string{"h"}, []Option{WithPrefix("foreman/")}, `WithPrefix("foreman/")`, ""},
		{"every bad option named", []string{"h"}, []Option{WithTTL(0), WithPrefix("")}, "WithPrefix", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := New(tt.eps, tt.opts...)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalidOption)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantURL, p.URL())
			require.Equal(t, DefaultTTL, p.DropAfter())
		})
	}
}
