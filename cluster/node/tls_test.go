//go:build !race

package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/cluster/tlsconf"
	"github.com/foreman-actors/foreman/cluster/tlsconf/tlsconftest"
	"github.com/foreman-actors/foreman/messages"
)

// startTLSNode starts a node whose remote and membership use m.
func startTLSNode(t *testing.T, role node.Role, m *tlsconf.Material, seed, data string) (*node.ClusterNode, *membership.Provider) {
	t.Helper()
	opts := []membership.Option{membership.WithHTTPAddr("127.0.0.1:0"), membership.WithLogger(testLogger()), membership.WithTLS(m)}
	if seed != "" {
		opts = append(opts, membership.WithSeedHTTP(seed))
	}
	prov, err := membership.New(opts...)
	require.NoError(t, err)
	n, err := node.StartCluster(context.Background(), node.ClusterConfig{
		Role: role, Provider: prov, DataDir: data, Logger: testLogger(), Workers: 1, TLS: m,
		WrapStart: func(start func()) { testkit.StartRemoteWith(t, start) },
	})
	require.NoError(t, err)
	t.Cleanup(n.Kill)
	return n, prov
}

// TestClusterTLS: a backend, a frontend and a worker with certificates of
// one CA run a job over mutual TLS. A frontend with another CA's
// certificate, even when told the backend's address, gets nothing
// delivered: its submission is never acknowledged and the master never
// hears of the job.
func TestClusterTLS(t *testing.T) {
	pki := tlsconftest.NewPKI(t, "cluster")
	data := t.TempDir()
	be, prov := startTLSNode(t, node.RoleBackend, pki.Material(t, "backend"), "", data)
	seed := prov.HTTPAddr()
	fe, _ := startTLSNode(t, node.RoleFrontend, pki.Material(t, "frontend"), seed, "")
	startTLSNode(t, node.RoleWorker, pki.Material(t, "worker"), seed, "")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, fe.Client().Submit(ctx, &messages.Work{WorkId: "tls-1", JobType: "square", Payload: []byte("7")}))
	require.Eventually(t, func() bool {
		st, err := fe.Client().WorkStatus(ctx, "tls-1")
		return err == nil && st.GetStatus() == messages.WorkStatus_WORK_STATUS_DONE
	}, testkit.Timeout(), 20*time.Millisecond, "the job did not complete over TLS")

	rogue := tlsconftest.NewPKI(t, "rogue")
	rfe, _ := startTLSNode(t, node.RoleFrontend, rogue.Material(t, "stranger"), seed, "")
	// Its membership learns nothing (TLS refuses it); tell it where the
	// backend is, as an attacker who knows the address would.
	host, port, err := be.System().GetHostPort()
	require.NoError(t, err)
	rfe.Cluster().MemberList.UpdateClusterTopology(cluster.Members{{
		Id: be.System().ID, Host: host, Port: int32(port), Kinds: []string{node.MasterKind},
	}})
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
	defer rcancel()
	require.Error(t, rfe.Client().Submit(rctx, &messages.Work{WorkId: "rogue-1", JobType: "square", Payload: []byte("3")}),
		"a frontend of another CA had its work acknowledged")
	st, err := fe.Client().WorkStatus(ctx, "rogue-1")
	require.NoError(t, err)
	require.Equal(t, messages.WorkStatus_WORK_STATUS_UNKNOWN, st.GetStatus(), "the master heard of the stranger's job")
}
