package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// TestKeysFailoverProcesses is issue 37 items 5 and 6 on real processes,
// through the HTTP API: 3 backends with 4 shards and --concurrency-limit
// tenant-a=2, a frontend, 2 worker processes of 3 slots each, the square
// job taking 400 ms.
//   - unique: a second submission with the key of a pending job is
//     answered 200 with that job's id (not run); after it is done, within
//     its unique_for, still the same job, status done; and so after the
//     backend hosting the key's shard is SIGKILLed (the index is durable);
//   - concurrency: 16 jobs of tenant-a and 12 plain ones at once; the
//     histories (started .. completed) show at most 2 of tenant-a running
//     at any instant, across the SIGKILL of the backend hosting tenant-a's
//     shard in the middle of them, while the plain jobs ran more than 2 at
//     once (so the cap is the key's, not the workers');
//   - every keyed job's id (a suffix puts it on its key's shard) answers
//     GET /work/{id} and ends done.
func TestKeysFailoverProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real cluster processes; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data := t.TempDir()
	ports := pickShardPorts(t)
	seedList := make([]string, len(ports.backends))
	for i, p := range ports.backends {
		seedList[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	seeds := "--seeds=" + strings.Join(seedList, ",")
	shards := "--shards=" + strconv.Itoa(shardCount)
	g := newProcGroup(t)
	step := func(format string, args ...any) { t.Logf("%s "+format, append([]any{g.since()}, args...)...) }

	backends := make([]*nodeProc, len(ports.backends))
	for i, p := range ports.backends {
		backends[i] = g.start(ctx, fmt.Sprintf("backend-%d", p), strconv.Itoa(p), seeds, shards, "--data", data,
			"--concurrency-limit", "tenant-a=2")
	}
	for _, b := range backends {
		b.waitLine(t, "node started", 1, 60*time.Second)
	}
	front := g.start(ctx, fmt.Sprintf("frontend-%d", ports.frontend), strconv.Itoa(ports.frontend), seeds, shards, "--produce=false")
	for i := range 2 {
		g.start(ctx, fmt.Sprintf("worker-%d", i+1), "0", seeds, shards, "--workers", "3", "--delay", "400ms")
	}
	front.waitLine(t, "node started", 1, 60*time.Second)
	base := fmt.Sprintf("http://127.0.0.1:%d", ports.frontend+5000)
	api, err := httpapi.NewClient(base)
	require.NoError(t, err)
	waitAllShards(ctx, t, g, api, nil)
	step("3 backends, 4 shards up")

	// The unique key lives on tenant-a's shard, so one kill tests both.
	keyShard := route.ShardOf("tenant-a", shardCount)
	invoice := ""
	for i := 0; invoice == ""; i++ {
		if k := "invoice-" + strconv.Itoa(i); route.ShardOf(k, shardCount) == keyShard {
			invoice = k
		}
	}
	unique := httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage("3"), UniqueKey: invoice, UniqueFor: "1h"}
	first, err := api.SubmitResult(ctx, unique)
	require.NoError(t, err)
	require.Empty(t, first.DuplicateOf)
	require.Equal(t, keyShard, route.ShardOf(first.ID, shardCount), "the id is on the key's shard")
	dup, err := api.SubmitResult(ctx, unique)
	require.NoError(t, err)
	require.Equal(t, first.ID, dup.DuplicateOf, "a second submission is the first job")
	require.Equal(t, first.ID, dup.ID)
	require.Contains(t, []string{httpapi.StatusAccepted, httpapi.StatusRunning}, dup.Status)
	info, err := api.Wait(ctx, first.ID, 50*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, httpapi.StatusDone, info.Status)
	dup, err = api.SubmitResult(ctx, unique)
	require.NoError(t, err)
	require.Equal(t, first.ID, dup.DuplicateOf)
	require.Equal(t, httpapi.StatusDone, dup.Status, "within unique_for a finished job still holds the key")
	step("unique: %s held %s; duplicates answered with it while pending and once done", first.ID, invoice)

	// The flood: tenant-a's jobs and plain ones at once, 8 posts at a time.
	var (
		mu    sync.Mutex
		keyed []string
		plain []string
	)
	reqs := make([]httpapi.SubmitRequest, 0, 28)
	for i := range 16 {
		reqs = append(reqs, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage(strconv.Itoa(i)), ConcurrencyKey: "tenant-a"})
	}
	for i := range 12 {
		reqs = append(reqs, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage(strconv.Itoa(100 + i))})
	}
	errs := make([]error, len(reqs))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, req := range reqs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			resp, err := api.SubmitResult(ctx, req)
			if err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if req.ConcurrencyKey != "" {
				keyed = append(keyed, resp.ID)
			} else {
				plain = append(plain, resp.ID)
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	for _, id := range keyed {
		require.Equal(t, keyShard, route.ShardOf(id, shardCount), "keyed job %s is on its key's shard", id)
	}
	step("16 jobs of tenant-a and 12 plain ones acked")

	// SIGKILL the backend hosting tenant-a's shard while its jobs run.
	waitDone(ctx, t, g, api, 1+4)
	// Every shard hosted first: CI once read the status while three
	// masters were between leases (a loaded machine) and found no victim.
	at := waitAllShards(ctx, t, g, api, nil)
	victim := -1
	for _, p := range ports.backends {
		if strings.HasSuffix(at[keyShard].Master.Address, ":"+strconv.Itoa(p)) {
			victim = p
		}
	}
	require.NotEqual(t, -1, victim, "no backend hosts shard %d: %s", keyShard, shardHosts(at))
	backends[slices.Index(ports.backends, victim)].kill(t)
	step("SIGKILLed backend %d, hosting shard %d (tenant-a's)", victim, keyShard)
	after := waitAllShards(ctx, t, g, api, func(s httpapi.ShardInfo) bool {
		return s.Shard != keyShard || s.Master.Epoch > at[keyShard].Master.Epoch
	})
	step("shard %d answers again: %s", keyShard, shardHosts(after))

	dup, err = api.SubmitResult(ctx, unique)
	require.NoError(t, err)
	require.Equal(t, first.ID, dup.DuplicateOf, "the unique key survives the failover")
	require.Equal(t, httpapi.StatusDone, dup.Status)

	// Everything ends done; then the histories are read.
	runs := func(ids []string) (most int, atT time.Time) {
		type edge struct {
			at time.Time
			d  int
		}
		var edges []edge
		for _, id := range ids {
			h := workHistory(ctx, t, base, id)
			for i, e := range h {
				if e.Event != "started" {
					continue
				}
				// The run ends at its attempt's end, or (conservatively)
				// at the job's end if none is recorded before the next.
				end := h[len(h)-1].At
				for _, f := range h[i+1:] {
					if f.Event == "completed" || f.Event == "failed" || f.Event == "timed_out" || f.Event == "dead" {
						end = f.At
						break
					}
				}
				edges = append(edges, edge{e.At, 1}, edge{end, -1})
			}
		}
		slices.SortFunc(edges, func(a, b edge) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return a.d - b.d // an end before a start at the same instant
		})
		n := 0
		for _, e := range edges {
			n += e.d
			if n > most {
				most, atT = n, e.at
			}
		}
		return most, atT
	}
	for _, id := range append(slices.Clone(keyed), plain...) {
		info, err := api.Wait(ctx, id, 100*time.Millisecond)
		require.NoError(t, err, "work %s", id)
		require.Equal(t, httpapi.StatusDone, info.Status, "work %s", id)
	}
	keyedMost, keyedAt := runs(keyed)
	plainMost, _ := runs(plain)
	step("all done; at most %d of tenant-a ran at once (at %s), %d plain ones", keyedMost, keyedAt.Format("15:04:05.000"), plainMost)
	require.LessOrEqual(t, keyedMost, 2, "tenant-a's limit of 2 was exceeded\n%s", g.tails())
	require.Equal(t, 2, keyedMost, "tenant-a's jobs should have used both slots")
	require.Greater(t, plainMost, 2, "plain jobs ran no more than 2 at once: the test cannot tell the key's cap from the workers'")
}

// workHistory is GET /work/{id}?history=true's history.
func workHistory(ctx context.Context, t *testing.T, base, id string) []httpapi.HistoryEntry {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+httpapi.PathWork+"/"+id+"?history=true", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /work/%s", id)
	var info httpapi.WorkInfo
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	return info.History
}
