package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

func TestListenAddr(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want, err string }{
		{in: "9100", want: "127.0.0.1:9100"},
		{in: ":9100", want: "127.0.0.1:9100"},
		{in: "0.0.0.0:9100", want: "0.0.0.0:9100"},
		{in: "[::1]:0", want: "[::1]:0"},
		{in: "", err: "empty"},
		{in: "host:port", err: "not a number"},
		{in: "99999", err: "not a number"},
	}
	for _, tt := range tests {
		got, err := ListenAddr(tt.in)
		if tt.err != "" {
			require.ErrorContains(t, err, tt.err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
	}
}

func TestMasterObserver(t *testing.T) {
	t.Parallel()
	m := New()
	o := m.MasterObserver()
	t0 := time.Unix(1000, 0).UnixNano()
	o.Recovered("s", 7)
	o.Durable("s", &messages.WorkAccepted{Work: &messages.Work{WorkId: "a", JobType: "sq"}, AtUnixNano: t0}, "sq")
	o.Durable("s", &messages.WorkAccepted{Work: &messages.Work{WorkId: "b", JobType: "sq"}, AtUnixNano: t0}, "sq")
	o.Durable("s", &messages.WorkCompleted{WorkId: "a", AtUnixNano: t0 + int64(300*time.Millisecond)}, "sq")
	o.Durable("s", &messages.WorkerFailed{WorkId: "b", AtUnixNano: t0}, "sq")
	o.Durable("s", &messages.WorkerTimedOut{WorkId: "b", AtUnixNano: t0, Dead: true}, "sq")
	o.Durable("s", &messages.WorkExpired{WorkId: "c"}, "")
	o.Durable("s", &messages.WorkerFailed{WorkId: "c", AtUnixNano: t0, Cancelled: true}, "sq")
	o.Counts("s", master.Counts{Pending: 3, InProgress: 2, Done: 1, Dead: 4, Cancelled: 7}, 5, 6)
	o.Permit("sq", true)
	o.Permit("sq", false)
	o.Permit("sq", false)

	require.InDelta(t, 2, testutil.ToFloat64(m.accepted.WithLabelValues("sq")), 0)
	require.InDelta(t, 1, testutil.ToFloat64(m.completed.WithLabelValues("sq")), 0)
	require.InDelta(t, 2, testutil.ToFloat64(m.failed.WithLabelValues("sq")), 0, "a failure and a time-out")
	require.InDelta(t, 1, testutil.ToFloat64(m.dead.WithLabelValues("sq")), 0)
	require.InDelta(t, 1, testutil.ToFloat64(m.dead.WithLabelValues("unknown")), 0, "an empty job type is labelled unknown")
	require.InDelta(t, 7, testutil.ToFloat64(m.epoch), 0)
	require.InDelta(t, 1, testutil.ToFloat64(m.activations), 0)
	require.InDelta(t, 3, testutil.ToFloat64(m.queue.WithLabelValues("pending")), 0)
	require.InDelta(t, 4, testutil.ToFloat64(m.queue.WithLabelValues("dead")), 0)
	require.InDelta(t, 7, testutil.ToFloat64(m.queue.WithLabelValues("cancelled")), 0)
	require.InDelta(t, 1, testutil.ToFloat64(m.cancelled.WithLabelValues("sq")), 0)
	require.InDelta(t, 6, testutil.ToFloat64(m.workers.WithLabelValues("busy")), 0)
	require.InDelta(t, 2, testutil.ToFloat64(m.permits.WithLabelValues("sq", "refused")), 0)
	// One submit -> result latency of 0.3 s, and no acceptance left behind.
	require.NoError(t, testutil.GatherAndCompare(m.reg, strings.NewReader(`
# HELP foreman_submit_result_seconds Acceptance to durable completion of a job, measured on the master's node from the events' times.
# TYPE foreman_submit_result_seconds histogram
foreman_submit_result_seconds_bucket{le="0.001"} 0
foreman_submit_result_seconds_bucket{le="0.002"} 0
foreman_submit_result_seconds_bucket{le="0.004"} 0
foreman_submit_result_seconds_bucket{le="0.008"} 0
foreman_submit_result_seconds_bucket{le="0.016"} 0
foreman_submit_result_seconds_bucket{le="0.032"} 0
foreman_submit_result_seconds_bucket{le="0.064"} 0
foreman_submit_result_seconds_bucket{le="0.128"} 0
foreman_submit_result_seconds_bucket{le="0.256"} 0
foreman_submit_result_seconds_bucket{le="0.512"} 1
foreman_submit_result_seconds_bucket{le="1.024"} 1
foreman_submit_result_seconds_bucket{le="2.048"} 1
foreman_submit_result_seconds_bucket{le="4.096"} 1
foreman_submit_result_seconds_bucket{le="8.192"} 1
foreman_submit_result_seconds_bucket{le="16.384"} 1
foreman_submit_result_seconds_bucket{le="32.768"} 1
foreman_submit_result_seconds_bucket{le="65.536"} 1
foreman_submit_result_seconds_bucket{le="131.072"} 1
foreman_submit_result_seconds_bucket{le="262.144"} 1
foreman_submit_result_seconds_bucket{le="524.288"} 1
foreman_submit_result_seconds_bucket{le="+Inf"} 1
foreman_submit_result_seconds_sum 0.3
foreman_submit_result_seconds_count 1
`), "foreman_submit_result_seconds"))
	require.Empty(t, m.acceptedAt)
}

func TestCommitObserverMetrics(t *testing.T) {
	t.Parallel()
	m := New()
	obs := m.CommitObserver()
	obs(journal.CommitStats{Requests: 2, Events: 5, Duration: time.Millisecond})
	obs(journal.CommitStats{Requests: 1, Duration: time.Millisecond}) // a lease renewal
	obs(journal.CommitStats{Requests: 1, Duration: time.Millisecond, Err: errors.New("disk full")})
	require.InDelta(t, 1, testutil.ToFloat64(m.commitErrors), 0)
	require.Equal(t, 1, testutil.CollectAndCount(m.commitEvents))
	require.NoError(t, testutil.GatherAndCompare(m.reg, strings.NewReader(`
# HELP foreman_journal_commit_errors_total Journal group-commit transactions that failed with a store error.
# TYPE foreman_journal_commit_errors_total counter
foreman_journal_commit_errors_total 1
`), "foreman_journal_commit_errors_total"))
}

// TestMailboxGauge blocks an actor and posts to it: the gauge shows what
// waits, and drops back to zero once the actor has received it all.
func TestMailboxGauge(t *testing.T) {
	t.Parallel()
	m := New()
	sys := actor.NewActorSystem()
	t.Cleanup(sys.Shutdown)
	release := make(chan struct{})
	received := make(chan struct{}, 10)
	props := actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(string); ok {
			<-release
			received <- struct{}{}
		}
	}, m.Mailbox(ActorWorker))
	pid := sys.Root.Spawn(props)
	for range 5 {
		sys.Root.Send(pid, "job")
	}
	// The first message is being received (it blocks) and four wait:
	// protoactor reports a message received once its handler returned.
	require.Eventually(t, func() bool { return m.mailboxLengths()[ActorWorker] == 5 }, testkit.Timeout(), time.Millisecond)
	close(release)
	for range 5 {
		<-received
	}
	require.Eventually(t, func() bool { return m.mailboxLengths()[ActorWorker] == 0 }, testkit.Timeout(), time.Millisecond)
	require.Equal(t, 1, testutil.CollectAndCount(m.reg, "foreman_actor_mailbox_messages"))
}

// TestCountsOverShards: a node hosting several shards' masters shows the
// sum of their queues, every worker once, and forgets a master that
// stopped here.
func TestCountsOverShards(t *testing.T) {
	t.Parallel()
	m := New()
	o := m.MasterObserver()
	o.Counts("master/0", master.Counts{Pending: 3, InProgress: 1, Dead: 1}, 3, 1)
	o.Counts("master/1", master.Counts{Pending: 5, InProgress: 2, Cancelled: 2}, 2, 2)
	gauge := func(v *prometheus.GaugeVec, l string) float64 { return testutil.ToFloat64(v.WithLabelValues(l)) }
	require.InDelta(t, 8, gauge(m.queue, "pending"), 0)
	require.InDelta(t, 3, gauge(m.queue, "running"), 0)
	require.InDelta(t, 1, gauge(m.queue, "dead"), 0)
	require.InDelta(t, 2, gauge(m.queue, "cancelled"), 0)
	require.InDelta(t, 3, gauge(m.workers, "busy"), 0, "busy in either shard")
	require.InDelta(t, 1, gauge(m.workers, "idle"), 0, "4 workers, each registered with both shards")

	o.Stopped("master/1")
	require.InDelta(t, 3, gauge(m.queue, "pending"), 0)
	require.InDelta(t, 0, gauge(m.queue, "cancelled"), 0)
	require.InDelta(t, 1, gauge(m.workers, "busy"), 0)
	require.InDelta(t, 3, gauge(m.workers, "idle"), 0)
}

// TestHandoutsHeld: the hand-outs held back by a key's limit or rate are
// counted from the masters' cumulative counts (a new activation starts
// them afresh), without a per-key label, and the keys held are summed over
// the shards.
func TestHandoutsHeld(t *testing.T) {
	t.Parallel()
	m := New()
	o := m.MasterObserver()
	held := func(reason string) float64 { return testutil.ToFloat64(m.handoutsHeld.WithLabelValues(reason)) }
	require.InDelta(t, 0, held("concurrency_limit"), 0)
	o.Counts("master/0", master.Counts{HeldByLimit: 3, HeldByRate: 1, KeysHeld: 2}, 1, 0)
	o.Counts("master/1", master.Counts{HeldByLimit: 2, KeysHeld: 1}, 1, 0)
	require.InDelta(t, 5, held("concurrency_limit"), 0)
	require.InDelta(t, 1, held("key_rate"), 0)
	require.InDelta(t, 3, testutil.ToFloat64(m.keysHeld), 0)
	o.Counts("master/0", master.Counts{HeldByLimit: 4, HeldByRate: 1}, 1, 0)
	require.InDelta(t, 6, held("concurrency_limit"), 0, "one more on master/0")
	require.InDelta(t, 1, testutil.ToFloat64(m.keysHeld), 0)
	o.Counts("master/0", master.Counts{HeldByLimit: 1}, 1, 0) // a new activation
	require.InDelta(t, 7, held("concurrency_limit"), 0, "counted afresh after a failover")
	o.Stopped("master/1")
	require.InDelta(t, 0, testutil.ToFloat64(m.keysHeld), 0)
}
