package node_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/membership/etcdmembers"
	"github.com/foreman-actors/foreman/cluster/node"
)

func TestParseMembership(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want, wantErr string
	}{
		{"", "seeds", ""},
		{"seeds", "seeds", ""},
		{" seeds ", "seeds", ""},
		{"etcd://10.0.0.5:2379", "etcd://10.0.0.5:2379", ""},
		{"etcd://e1,e2:12379", "etcd://e1:2379,e2:12379", ""},
		{"etcd://", "", "no etcd endpoint"},
		{"etcd", "", "want seeds, or etcd://"},
		{"http://10.0.0.5:2379", "", "want seeds, or etcd://"},
		{"etcd://user:pw@h:2379", "", "no path, query or user"},
		{"etcd://h:2379/foreman", "", "no path, query or user"},
		{"etcd://h:0", "", "not 1-65535"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			m, err := node.ParseMembership(tt.in)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, node.ErrInvalidConfig)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, m.String())
		})
	}
}

func TestNewMembership(t *testing.T) {
	t.Parallel()
	p, err := node.NewMembership("seeds", []string{"127.0.0.1:2551"}, "127.0.0.1", nil, nil)
	require.NoError(t, err)
	require.IsType(t, &membership.Provider{}, p)
	p, err = node.NewMembership("etcd://127.0.0.1:23790", nil, "127.0.0.1", nil, nil)
	require.NoError(t, err)
	require.IsType(t, &etcdmembers.Provider{}, p)
	require.Equal(t, etcdmembers.DefaultTTL, p.(*etcdmembers.Provider).DropAfter())
	_, err = node.NewMembership("zk://h", nil, "127.0.0.1", nil, nil)
	require.ErrorIs(t, err, node.ErrInvalidConfig)
}
