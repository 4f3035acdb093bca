package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/messages"
)

// TestScheduleLatenessFigures measures how late ticks become durable jobs
// under light load: an all-in-one node, FOREMAN_SCHEDULE_FIGURES=N
// schedules @every 1s for 60 s, and for every tick the time from the tick to
// the master's WorkAccepted (its at_unix_nano in the journal: submission and
// fsync included). Figures for docs/benchmarks/issue37-cron.md.
func TestScheduleLatenessFigures(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("FOREMAN_SCHEDULE_FIGURES"))
	if n <= 0 {
		t.Skip("set FOREMAN_SCHEDULE_FIGURES=N to measure N @every 1s schedules for 60 s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	port := freePort(t)
	g := newProcGroup(t)
	node := g.start(ctx, "all-in-one", "--data", data, "--http", fmt.Sprintf("127.0.0.1:%d", port), "--produce=false", "--delay", "0")
	node.waitLine(t, "http api listening", 1, 60*time.Second)
	c, err := httpapi.NewClient(fmt.Sprintf("127.0.0.1:%d", port))
	require.NoError(t, err)
	for i := range n {
		_, err := c.AddSchedule(ctx, httpapi.ScheduleRequest{Name: fmt.Sprintf("s%d", i), Spec: "@every 1s", Type: "square", Payload: []byte("3")})
		require.NoError(t, err)
	}
	g.hold(ctx, 60*time.Second)
	for i := range n {
		// Retried: after a minute idle, the server may close the kept-alive
		// connection just as the client reuses it (a DELETE is not replayed).
		require.Eventually(t, func() bool { return c.RemoveSchedule(ctx, fmt.Sprintf("s%d", i)) == nil }, 10*time.Second, 100*time.Millisecond)
	}
	g.stopAll()

	j, err := journal.OpenSQLite(filepath.Join(data, "journal.db"))
	require.NoError(t, err)
	defer func() { require.NoError(t, j.Close()) }()
	var late []time.Duration
	require.NoError(t, j.Load(t.Context(), master.DefaultStream, 1, func(ev persistence.Event) error {
		if m, ok := ev.Msg.(*messages.WorkAccepted); ok {
			id := m.GetWork().GetWorkId()
			if i := strings.LastIndexByte(id, ':'); strings.HasPrefix(id, "sched:") && i > 0 {
				tick, err := strconv.ParseInt(id[i+1:], 10, 64)
				if err == nil {
					late = append(late, time.Duration(m.GetAtUnixNano()-tick*int64(time.Second)))
				}
			}
		}
		return nil
	}))
	require.NotEmpty(t, late)
	slices.Sort(late)
	q := func(p float64) time.Duration { return late[min(len(late)-1, int(p*float64(len(late))))] }
	t.Logf("schedules=%d ticks=%d tick->accepted: min %v p50 %v p90 %v p99 %v max %v",
		n, len(late), late[0].Round(time.Microsecond), q(0.5).Round(time.Microsecond), q(0.9).Round(time.Microsecond), q(0.99).Round(time.Microsecond), late[len(late)-1].Round(time.Microsecond))
}
