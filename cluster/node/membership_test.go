package node_test

import (
	"crypto/x509"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/membership/etcdmembers"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/cluster/tlsconf"
	"github.com/foreman-actors/foreman/cluster/tlsconf/tlsconftest"
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

// TestWithEtcdCANeedsTLSAndEtcd: an etcd CA without the node's TLS
// material, or with seed membership, is a configuration error naming the
// option; with both it makes an etcd provider.
func TestWithEtcdCANeedsTLSAndEtcd(t *testing.T) {
	t.Parallel()
	tlsm := tlsconftest.NewPKI(t, "cluster").Material(t, "n", "127.0.0.1")
	ca := x509.NewCertPool()
	tests := []struct {
		name, url string
		tlsm      *tlsconf.Material
		wantErr   string
	}{
		{"EtcdAndTLS", "etcd://127.0.0.1:23790", tlsm, ""},
		{"NoTLS", "etcd://127.0.0.1:23790", nil, "WithEtcdCA needs etcd membership and the node's TLS material"},
		{"Seeds", "seeds", tlsm, "WithEtcdCA needs etcd membership"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := node.NewMembership(tt.url, []string{"127.0.0.1:2551"}, "127.0.0.1", nil, tt.tlsm, node.WithEtcdCA(ca))
			if tt.wantErr != "" {
				require.ErrorIs(t, err, node.ErrInvalidConfig)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.IsType(t, &etcdmembers.Provider{}, p)
		})
	}
}
