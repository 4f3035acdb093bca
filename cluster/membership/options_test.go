package membership_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/membership"
)

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opt     membership.Option
		wantMsg string
	}{
		{name: "seed without port", opt: membership.WithSeeds("127.0.0.1"), wantMsg: `seed "127.0.0.1"`},
		{name: "seed with bad port", opt: membership.WithSeeds("127.0.0.1:99999"), wantMsg: "0..65535"},
		{name: "seed without host", opt: membership.WithSeeds(":2551"), wantMsg: "missing host"},
		{name: "seed endpoint", opt: membership.WithSeedHTTP("nope"), wantMsg: `seed endpoint "nope"`},
		{name: "empty bind host", opt: membership.WithBindHost(""), wantMsg: "bind host is empty"},
		{name: "HTTP address", opt: membership.WithHTTPAddr("127.0.0.1"), wantMsg: "HTTP address"},
		{name: "port offset", opt: membership.WithPortOffset(0), wantMsg: "port offset 0"},
		{name: "refresh", opt: membership.WithRefresh(0), wantMsg: "refresh 0s"},
		{name: "timeout", opt: membership.WithTimeout(-1), wantMsg: "probe timeout"},
		{name: "failures", opt: membership.WithFailures(0), wantMsg: "failures 0"},
		{name: "silence", opt: membership.WithSilence(0), wantMsg: "silence 0s"},
		{name: "silence within a refresh", opt: membership.WithSilence(membership.DefaultRefresh), wantMsg: "not longer than the refresh"},
		{name: "forget", opt: membership.WithForget(0), wantMsg: "forget 0s"},
		{name: "client TTL", opt: membership.WithClientTTL(0), wantMsg: "client TTL 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := membership.New(tt.opt)
			require.Nil(t, p)
			require.ErrorIs(t, err, membership.ErrInvalidOption)
			require.ErrorContains(t, err, tt.wantMsg)
		})
	}
}

func TestNewReportsEveryBadOption(t *testing.T) {
	t.Parallel()
	_, err := membership.New(membership.WithFailures(0), membership.WithRefresh(0))
	require.ErrorContains(t, err, "failures 0")
	require.ErrorContains(t, err, "refresh 0s")
}

func TestShutdownBeforeStart(t *testing.T) {
	t.Parallel()
	p, err := membership.New(membership.WithSeeds("127.0.0.1:2551", "127.0.0.1:2552"))
	require.NoError(t, err)
	require.NoError(t, p.Shutdown(true))
	require.NoError(t, p.Shutdown(false))
	require.Empty(t, p.Members())
	require.Empty(t, p.Clients())
	require.Empty(t, p.HTTPAddr())
}

func TestRoleOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		port   int
		kinds  []string
		client bool
		want   string
	}{
		{name: "backend range", port: 2551, want: membership.RoleBackend},
		{name: "backend range edge", port: 2999, client: true, want: membership.RoleBackend},
		{name: "frontend range", port: 3000, client: true, want: membership.RoleFrontend},
		{name: "worker port", port: 41234, client: true, want: membership.RoleWorker},
		{name: "member hosting kinds elsewhere", port: 41234, kinds: []string{"prototopic", "master"}, want: membership.RoleBackend},
		{name: "member hosting only pub-sub", port: 41234, kinds: []string{"prototopic"}, want: membership.RoleWorker},
		{name: "below the ranges", port: 1999, want: membership.RoleWorker},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, membership.RoleOf(tt.port, tt.kinds, tt.client))
		})
	}
}
