package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/clock"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/throttler"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// A real throttler feeds the throttler metrics: permits granted, the queue,
// the rate and the mode.
func TestThrottleObserver(t *testing.T) {
	t.Parallel()
	m := New()
	o, err := m.ThrottleObserver()
	require.NoError(t, err)
	again, err := m.ThrottleObserver()
	require.NoError(t, err, "a second call shares the instruments")
	require.NotNil(t, again)

	mem := journal.NewMemory()
	t.Cleanup(func() { _ = mem.Close() })
	sys := testkit.NewSystem(t)
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	props, err := throttler.PermitThrottlerProps(mem, "square", throttler.PerSecond(4), false,
		throttler.WithPermitClock(clk), throttler.WithPermitObserver(o), throttler.WithPermitLogger(sys.Logger()))
	require.NoError(t, err)
	thr := sys.Root.Spawn(props)
	pool := testkit.NewProbe(t, sys)
	pool.Send(thr, &messages.PermitRequest{JobType: "square", Want: 4, Pool: 1})
	testkit.ExpectMsgType[*messages.PermitGrant](pool, testkit.Timeout())
	pool.Send(thr, &messages.PermitRequest{JobType: "square", Want: 3, Pool: 2})
	pool.Request(thr, &messages.ThrottleGetStatus{JobType: "square"})
	st := testkit.ExpectMsgType[*messages.ThrottleStatus](pool, testkit.Timeout())
	require.EqualValues(t, 3, st.GetQueued())

	require.InDelta(t, 4, testutil.ToFloat64(o.(throttleObserver).grants.WithLabelValues("square", "granted")), 0)
	require.InDelta(t, 3, testutil.ToFloat64(o.(throttleObserver).queue.WithLabelValues("square")), 0)
	require.InDelta(t, 4, testutil.ToFloat64(o.(throttleObserver).rate.WithLabelValues("square")), 0)
	require.InDelta(t, 0, testutil.ToFloat64(o.(throttleObserver).strict.WithLabelValues("square")), 0)
	n, err := testutil.GatherAndCount(m.Registry(), "foreman_throttler_grants_total", "foreman_throttler_queue_permits",
		"foreman_throttler_rate_per_second", "foreman_throttler_strict")
	require.NoError(t, err)
	require.Equal(t, 4, n)
}
