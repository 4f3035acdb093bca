package pullcluster_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/pulling"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/pullcluster"
)

func TestJoinRejectsBadConfig(t *testing.T) {
	t.Parallel()
	j := journal.NewMemory()
	t.Cleanup(func() { _ = j.Close() })
	master := pullcluster.EpicMaster(j, func(context.Context, string) (pulling.SeekEpic[int], error) { return nil, nil })
	prov, err := membership.New(membership.WithHTTPAddr("127.0.0.1:0"))
	require.NoError(t, err)
	tests := []struct {
		name string
		cfg  pullcluster.Config
		want string
	}{
		{"no provider", pullcluster.Config{Member: true, Master: master}, "Provider is required"},
		{"member without master", pullcluster.Config{Provider: prov, Member: true}, "set Master"},
		{"client with master", pullcluster.Config{Provider: prov, Master: master}, "a client hosts nothing"},
		{"negative port", pullcluster.Config{Provider: prov, Port: -1}, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := pullcluster.Join(context.Background(), tt.cfg)
			require.ErrorIs(t, err, pullcluster.ErrInvalidConfig)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestEpicMasterRejectsBadOptions(t *testing.T) {
	t.Parallel()
	prov, err := membership.New(membership.WithHTTPAddr("127.0.0.1:0"))
	require.NoError(t, err)
	// A nil opener is refused when the member builds its kind, before it
	// starts anything.
	j := journal.NewMemory()
	t.Cleanup(func() { _ = j.Close() })
	master := pullcluster.EpicMaster[int](j, nil)
	_, err = pullcluster.Join(context.Background(), pullcluster.Config{Provider: prov, Member: true, Master: master})
	require.ErrorIs(t, err, pulling.ErrInvalidConfig)
}
