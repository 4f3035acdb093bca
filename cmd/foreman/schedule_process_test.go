package main

import (
	"context"
	"fmt"
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
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// TestScheduleFailoverProcess: an @every 1s schedule added through a
// frontend's HTTP API keeps firing once per tick while the backend that
// hosts the scheduler is killed with SIGKILL: the other backend's scheduler
// takes over from the journal, and the master's journal accepted every tick's
// job (sched:beat:<unix>) exactly once, with no tick missing (the schedule
// catches up on the ticks of the failover).
func TestScheduleFailoverProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real cluster processes; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	data := t.TempDir()
	dbPath := filepath.Join(data, node.JournalFile)
	ports := pickWalkPorts(t)
	seeds := fmt.Sprintf("--seeds=127.0.0.1:%d,127.0.0.1:%d", ports.backend1, ports.backend2)
	g := newProcGroup(t)

	b1 := g.start(ctx, "backend-1", strconv.Itoa(ports.backend1), seeds, "--data", data)
	b2 := g.start(ctx, "backend-2", strconv.Itoa(ports.backend2), seeds, "--data", data)
	b1.waitLine(t, "node started", 1, 60*time.Second)
	b2.waitLine(t, "node started", 1, 60*time.Second)
	front := g.start(ctx, "frontend", strconv.Itoa(ports.frontend), seeds, "--produce=false")
	g.start(ctx, "worker", "0", seeds, "--workers", "2", "--delay", "0")
	front.waitLine(t, "http api listening", 1, 60*time.Second)

	c, err := httpapi.NewClient(fmt.Sprintf("127.0.0.1:%d", ports.frontend+5000))
	require.NoError(t, err)
	var added *httpapi.ScheduleInfo
	require.Eventually(t, func() bool {
		added, err = c.AddSchedule(ctx, httpapi.ScheduleRequest{Name: "beat", Spec: "@every 1s", Type: "square", Payload: []byte("3"),
			Missed: httpapi.MissedCatchUp, CatchUpMax: 100})
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "POST /schedules: %v\n%s", err)
	t.Logf("%s added %+v", g.since(), added)

	// Bad input: a 400 naming the field, nothing added.
	_, err = c.AddSchedule(ctx, httpapi.ScheduleRequest{Name: "bad", Spec: "0 0 25 * * *", Type: "square"})
	require.ErrorIs(t, err, httpapi.ErrInvalid)
	require.Contains(t, err.Error(), `hour "25"`)

	fired := func() int64 {
		list, err := c.Schedules(ctx)
		if err != nil || len(list) != 1 {
			return -1
		}
		return list[0].Fired
	}
	require.Eventually(t, func() bool { return fired() >= 3 }, 30*time.Second, 100*time.Millisecond, "ticks do not fire\n%s", g.tails())

	// Kill the backend whose scheduler serves (the latest to recover).
	host, other := b1, b2
	if lastAt(b2, "scheduler recovered").After(lastAt(b1, "scheduler recovered")) {
		host, other = b2, b1
	}
	before := fired()
	killedAt := time.Now()
	host.kill(t)
	t.Logf("%s killed %s (scheduler host) at %d ticks fired", g.since(), host.name, before)
	other.waitFor(t, "the other backend's scheduler recovered", 60*time.Second, func(lines []logLine) bool {
		return slices.ContainsFunc(lines, func(l logLine) bool { return l.at.After(killedAt) && strings.Contains(l.text, "scheduler recovered") })
	})
	t.Logf("%s %s took over the scheduler after %v", g.since(), other.name, other.firstAfter("scheduler recovered", killedAt))
	var after int64
	require.Eventually(t, func() bool { after = fired(); return after >= before+5 }, 60*time.Second, 200*time.Millisecond,
		"ticks stopped after the failover at %d\n%s", after, g.tails())

	// Stop the schedule, then judge the master's journal.
	require.Eventually(t, func() bool { return c.RemoveSchedule(ctx, "beat") == nil }, 20*time.Second, 200*time.Millisecond)
	ticks := acceptedTicks(t, dbPath, "beat")
	require.GreaterOrEqual(t, len(ticks), int(after), "the master accepted fewer ticks than the scheduler fired")
	for i := 1; i < len(ticks); i++ {
		require.Equal(t, ticks[i-1]+1, ticks[i], "ticks %v: a gap or a repeat after %d", ticks, ticks[i-1])
	}
	t.Logf("%s %d ticks, each accepted once, none missing: %d..%d", g.since(), len(ticks), ticks[0], ticks[len(ticks)-1])
}

// lastAt is when p last logged substr (zero if never).
func lastAt(p *nodeProc, substr string) time.Time {
	var at time.Time
	for _, l := range p.log.lines() {
		if strings.Contains(l.text, substr) {
			at = l.at
		}
	}
	return at
}

// acceptedTicks reads the master's stream and returns the ticks of
// schedule name whose jobs it accepted, sorted; it fails the test when one
// was accepted twice.
func acceptedTicks(t *testing.T, dbPath, name string) []int64 {
	t.Helper()
	j, err := journal.OpenSQLite(dbPath)
	require.NoError(t, err)
	defer func() { require.NoError(t, j.Close()) }()
	seen := map[string]int{}
	require.NoError(t, j.Load(t.Context(), master.DefaultStream, 1, func(ev persistence.Event) error {
		switch m := ev.Msg.(type) {
		case *messages.WorkAccepted:
			seen[m.GetWork().GetWorkId()]++
		case *messages.WorksAccepted:
			for _, w := range m.GetWorks() {
				seen[w.GetWorkId()]++
			}
		}
		return nil
	}))
	var ticks []int64
	for id, n := range seen {
		rest, ok := strings.CutPrefix(id, "sched:"+name+":")
		if !ok {
			continue
		}
		require.Equal(t, 1, n, "work %s accepted %d times", id, n)
		tick, err := strconv.ParseInt(rest, 10, 64)
		require.NoError(t, err)
		ticks = append(ticks, tick)
	}
	slices.Sort(ticks)
	return ticks
}
