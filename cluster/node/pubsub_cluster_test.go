//go:build !race

package node_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// TestClusterNoResultsPubSub (issue 39): a backend with NoResultsPubSub
// publishes no result on the results topic, yet every result still reaches
// a frontend reading the durable feed and every caller waiting for its
// outcome (Do). The control, the same cluster with publishing on, shows
// that a pub-sub frontend hears results there, so hearing none is the
// option's doing.
func TestClusterNoResultsPubSub(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test: skipped with -short")
	}
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoResultsPubSub=%v", off), func(t *testing.T) {
			h := newClusterHarness(t)
			h.start(node.RoleBackend, func(c *node.ClusterConfig) {
				c.NoResultsPubSub = off
			})
			var fromFeed, fromPubSub atomic.Int64
			fe, _ := h.start(node.RoleFrontend, func(c *node.ClusterConfig) {
				c.OnResult = func(*messages.WorkResult) { fromFeed.Add(1) }
				c.FrontendOptions = quickFrontend()
			})
			h.start(node.RoleFrontend, func(c *node.ClusterConfig) {
				c.ResultsFromPubSub = true
				c.OnResult = func(*messages.WorkResult) { fromPubSub.Add(1) }
				c.FrontendOptions = quickFrontend()
			})
			reg := squareRegistry(t)
			h.start(node.RoleWorker, func(c *node.ClusterConfig) {
				c.Workers = 2
				c.Registry = reg
				c.WorkerOptions = []worker.Option{worker.WithRegisterInterval(500 * time.Millisecond)}
			})

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// Jobs one at a time, each waited for, until the pub-sub
			// frontend has heard one (it subscribes once membership has
			// converged) or, publishing off, as many as that took with it on.
			jobs := 0
			deadline := time.Now().Add(20 * time.Second)
			for jobs < 20 || (!off && fromPubSub.Load() == 0 && time.Now().Before(deadline)) {
				jobs++
				res, err := fe.Client().Do(ctx, &messages.Work{WorkId: fmt.Sprint("job-", jobs), JobType: "square", Payload: []byte(strconv.Itoa(jobs))})
				require.NoError(t, err)
				require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, res.GetStatus(), "the waiting caller hears its outcome")
				require.Equal(t, strconv.Itoa(jobs*jobs), string(res.GetResult()))
			}
			require.Eventually(t, func() bool { return fromFeed.Load() == int64(jobs) }, 30*time.Second, 20*time.Millisecond,
				"the feed frontend read %d of %d results", fromFeed.Load(), jobs)
			if !off {
				require.Positive(t, fromPubSub.Load(), "publishing on: the pub-sub frontend hears results")
				return
			}
			time.Sleep(2 * time.Second) // the producer batches; give a stray result time to arrive
			require.Zero(t, fromPubSub.Load(), "publishing off: no result on the topic")
		})
	}
}

// TestNoResultsPubSubOnlyOnBackends: the option stops the masters
// publishing, so a node without masters refuses it.
func TestNoResultsPubSubOnlyOnBackends(t *testing.T) {
	t.Parallel()
	for _, role := range []node.Role{node.RoleFrontend, node.RoleWorker} {
		prov, err := membership.New(membership.WithHTTPAddr("127.0.0.1:0"), membership.WithLogger(testLogger()))
		require.NoError(t, err)
		_, err = node.StartCluster(context.Background(), node.ClusterConfig{Role: role, Provider: prov, NoResultsPubSub: true, Logger: testLogger()})
		require.ErrorIs(t, err, node.ErrInvalidConfig)
		require.ErrorContains(t, err, "backend nodes only")
	}
}
