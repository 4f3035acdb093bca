package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/cpustat"
)

// The HTTP mode drives a running cluster the way its users do: jobs posted
// to a frontend's API (POST /work one by one, or POST /work/batch), each
// counted once its 201 says it is durable, and every result read back from
// the durable result feed (GET /results), so a figure covers submitted,
// durable and run. Results the feed no longer holds when its reader gets
// there (410: see httpfeed.go) are settled by the job's state (GET
// /work/{id}), and the output says how many. The load generator runs in
// this process: on a shared machine its own CPU is part of what is
// measured, and the output says so.

// HTTPMode is how the HTTP benchmark submits.
type HTTPMode string

// The HTTP benchmark's modes.
const (
	// HTTPSingle posts one job per request (POST /work).
	HTTPSingle HTTPMode = "single"
	// HTTPBatch posts Batch jobs per request (POST /work/batch).
	HTTPBatch HTTPMode = "batch"
	// HTTPGrouped submits one job per call from Connections goroutines
	// that share one httpapi.SubmitGroup: the calls made while its
	// requests are out travel together in POST /work/batch.
	HTTPGrouped HTTPMode = "grouped"
)

// ErrHTTPBench marks a run that could not be measured: the cluster refused
// the benchmark's jobs, or its results did not all arrive in time.
var ErrHTTPBench = errors.New("the run over HTTP failed")

// HTTPConfig describes one run against a cluster's HTTP API.
type HTTPConfig struct {
	// Client reaches a frontend's API (token and TLS already set).
	Client *httpapi.Client
	// Mode is HTTPSingle, HTTPBatch or HTTPGrouped.
	Mode HTTPMode
	// Jobs is the number of jobs of the throughput phase.
	Jobs int
	// Connections is the number of requests in flight at once.
	Connections int
	// Batch is the number of jobs per request in HTTPBatch mode (at most
	// httpapi.MaxBatchItems).
	Batch int
	// Type and Payload are the job every request carries (e.g. "square"
	// and 7): the cluster's workers must know the type.
	Type    string
	Payload json.RawMessage
	// Results follows GET /results and waits for every job's result
	// (those the feed no longer holds are looked up with GET /work/{id});
	// false measures durable acks only.
	Results bool
	// ResultTimeout bounds the wait for the remaining results after the
	// last ack (a cluster whose workers cannot keep up needs longer).
	ResultTimeout time.Duration
	// LightJobs is the number of jobs of the light-load phase, one in
	// flight (0 skips it); it needs Results.
	LightJobs int
	// RunID prefixes the job ids ("hb-RUNID-N"); empty picks a random one,
	// so runs against the same cluster never collide.
	RunID string
	// OnAck, when set, is called with the number of jobs a request got
	// acknowledged, for a progress line; it must be quick.
	OnAck func(n int)
	// CPU, when set, is sampled around the throughput phase (first request
	// to the last result read, or the last ack without Results): its
	// processes' CPU per job goes into the result.
	CPU *cpustat.Meter
}

// HTTPResult holds the figures of an HTTP run. Latencies are per request:
// one job in single mode, one batch in batch mode.
type HTTPResult struct {
	Mode                  HTTPMode
	Jobs, Requests, Batch int
	Connections           int
	// AckElapsed runs from the first request to the last 201.
	AckElapsed time.Duration
	// AcksPerSecond is Jobs / AckElapsed: jobs made durable per second.
	AcksPerSecond float64
	// Resent counts batch items answered 503 and sent again (same id).
	Resent int
	// AckP50, AckP90, AckP99 and AckMax are request->201 latencies.
	AckP50, AckP90, AckP99, AckMax time.Duration
	// Results says whether the result feed was followed; the fields
	// below are zero otherwise.
	Results bool
	// Elapsed runs from the first request to the last result read back
	// (from the feed, or the last lookup that settled a job).
	Elapsed time.Duration
	// JobsPerSecond is Jobs / Elapsed: submitted, durable and run.
	JobsPerSecond float64
	// Failed counts results that were not done (dead or cancelled).
	Failed int
	// FeedGone counts the 410 answers of GET /results: its reader fell
	// behind the feed's retention and resumed from the oldest cursor.
	FeedGone int
	// Settled counts the throughput phase's jobs whose outcome was read
	// with GET /work/{id} after a 410, not from the feed; they count as
	// done only if their state was done. Lookups counts those requests
	// (jobs still running when looked up came later in the feed).
	Settled, Lookups int
	// ResultP50 and ResultP99 are submit->result-read latencies of the
	// results read from the feed (settled jobs are left out).
	ResultP50, ResultP99 time.Duration
	// LightAckP50 .. LightResultP99 are the light phase's latencies (one
	// job in flight); zero when it was skipped.
	LightAckP50, LightAckP99, LightResultP50, LightResultP99 time.Duration
	// LightSettled counts the light phase's jobs settled by GET /work/{id}
	// (their result latency is the lookup's answer).
	LightSettled int
	// CPU is each measured process's CPU time over the throughput phase
	// (HTTPConfig.CPU); the load generator is named LoadGenerator.
	CPU []cpustat.Usage
}

// LoadGenerator names this process in the CPU figures.
const LoadGenerator = "load-generator"

// String formats the result for people.
func (r HTTPResult) String() string {
	var b strings.Builder
	per := "job"
	if r.Mode == HTTPBatch {
		per = fmt.Sprintf("batch of %d", r.Batch)
	}
	if r.Mode == HTTPGrouped {
		fmt.Fprintf(&b, "durable acks: %d jobs in %v = %.0f jobs/s (%d submitters sharing one SubmitGroup, POST %s)\n",
			r.Jobs, r.AckElapsed.Round(time.Millisecond), r.AcksPerSecond, r.Connections, pathOf(r.Mode))
	} else {
		fmt.Fprintf(&b, "durable acks: %d jobs in %v = %.0f jobs/s (%d requests, %d connections, POST %s)\n",
			r.Jobs, r.AckElapsed.Round(time.Millisecond), r.AcksPerSecond, r.Requests, r.Connections, pathOf(r.Mode))
	}
	fmt.Fprintf(&b, "request->201 (one %s): p50 %v p90 %v p99 %v max %v\n", per, r.AckP50, r.AckP90, r.AckP99, r.AckMax)
	if r.Resent > 0 {
		fmt.Fprintf(&b, "batch items answered 503 and sent again: %d\n", r.Resent)
	}
	if r.Results {
		from := "results read from GET /results"
		if r.Settled > 0 {
			from += fmt.Sprintf(", %d of them from GET /work/{id}", r.Settled)
		}
		fmt.Fprintf(&b, "end to end: %d jobs submitted, durable and run in %v = %.0f jobs/s (%s; %d not done)\n",
			r.Jobs, r.Elapsed.Round(time.Millisecond), r.JobsPerSecond, from, r.Failed)
		if r.FeedGone > 0 {
			fmt.Fprintf(&b, "settled by GET /work/{id}: %d of %d jobs (GET /results answered 410 %s: its reader fell behind the feed's retention and resumed at the oldest cursor; %d lookups; submit->result read covers the other %d)\n",
				r.Settled, r.Jobs, times(r.FeedGone), r.Lookups, r.Jobs-r.Settled)
		}
		fmt.Fprintf(&b, "submit->result read: p50 %v p99 %v\n", r.ResultP50, r.ResultP99)
	} else {
		b.WriteString("end to end: not measured (results not followed)\n")
	}
	if r.LightAckP50 > 0 {
		fmt.Fprintf(&b, "light load (one job in flight): submit->201 p50 %v p99 %v; submit->result read p50 %v p99 %v",
			r.LightAckP50, r.LightAckP99, r.LightResultP50, r.LightResultP99)
		if r.LightSettled > 0 {
			fmt.Fprintf(&b, " (%d settled by GET /work/{id})", r.LightSettled)
		}
		b.WriteString("\n")
	}
	b.WriteString(cpustat.Format(r.CPU, r.Jobs, LoadGenerator))
	b.WriteString("(the load generator runs in this process: on a shared machine its CPU counts against the cluster's)\n")
	return b.String()
}

// times says n times in words: "once", "2 times".
func times(n int) string {
	if n == 1 {
		return "once"
	}
	return strconv.Itoa(n) + " times"
}

func pathOf(m HTTPMode) string {
	if m == HTTPBatch || m == HTTPGrouped {
		return httpapi.PathWorkBatch
	}
	return httpapi.PathWork
}

// Validate says what is wrong with cfg, before anything is sent.
func (cfg *HTTPConfig) Validate() error {
	switch {
	case cfg.Client == nil:
		return errors.New("no API client")
	case cfg.Mode != HTTPSingle && cfg.Mode != HTTPBatch && cfg.Mode != HTTPGrouped:
		return fmt.Errorf("mode %q is not %q, %q or %q", cfg.Mode, HTTPSingle, HTTPBatch, HTTPGrouped)
	case cfg.Jobs < 1 || cfg.Connections < 1:
		return fmt.Errorf("jobs and connections must be >= 1 (got %d, %d)", cfg.Jobs, cfg.Connections)
	case cfg.Mode == HTTPBatch && (cfg.Batch < 1 || cfg.Batch > httpapi.MaxBatchItems):
		return fmt.Errorf("batch must be 1..%d (got %d)", httpapi.MaxBatchItems, cfg.Batch)
	case cfg.Type == "":
		return errors.New("no job type (the workers' type, e.g. square)")
	case cfg.LightJobs < 0:
		return fmt.Errorf("light must be >= 0 (got %d)", cfg.LightJobs)
	case cfg.LightJobs > 0 && !cfg.Results:
		return errors.New("the light phase measures results: it needs the result feed followed")
	case len(cfg.Payload) > 0 && !json.Valid(cfg.Payload):
		return fmt.Errorf("payload %q is not JSON (a number, a quoted string, an object...)", cfg.Payload)
	}
	return nil
}

// httpRun is one run's shared bookkeeping: when each job was sent, which
// results arrived, and who waits for one.
type httpRun struct {
	mu      sync.Mutex // guards the fields below
	sent    map[string]time.Time
	waiting map[string]chan struct{}
	seen    map[string]bool
	resLat  []time.Duration // of the results read from the feed
	failed  int
	settled int           // results read with GET /work/{id}, not from the feed
	lookups int           // GET /work/{id} requests of the settler
	gone    int           // 410 answers of the feed
	pending int           // throughput-phase results still to come
	all     chan struct{} // closed when pending reaches 0 after armed
	armed   bool
	last    time.Time // when the newest result was read
}

func (h *httpRun) send(id string, done chan struct{}) {
	h.mu.Lock()
	h.sent[id] = time.Now()
	if done != nil {
		h.waiting[id] = done
	}
	h.mu.Unlock()
}

// finish records the outcome (status) of job id, read at now from the feed
// or, settled, from GET /work/{id}; jobs of other runs, and outcomes read
// before, are ignored.
func (h *httpRun) finish(id, status string, now time.Time, settled bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.sent[id]
	if !ok || h.seen[id] {
		return
	}
	h.seen[id] = true
	if settled {
		h.settled++
	} else {
		h.resLat = append(h.resLat, now.Sub(t))
	}
	if now.After(h.last) {
		h.last = now
	}
	if status != httpapi.StatusDone {
		h.failed++
	}
	if ch, ok := h.waiting[id]; ok {
		close(ch)
		delete(h.waiting, id)
		return
	}
	h.pending--
	if h.armed && h.pending == 0 {
		close(h.all)
	}
}

// unread returns the jobs sent before t whose outcome was not read yet,
// oldest first.
func (h *httpRun) unread(t time.Time) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []string
	for id, at := range h.sent {
		if at.Before(t) && !h.seen[id] {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return h.sent[a].Compare(h.sent[b]) })
	return ids
}

func (h *httpRun) feedGone() {
	h.mu.Lock()
	h.gone++
	h.mu.Unlock()
}

func (h *httpRun) lookedUp() {
	h.mu.Lock()
	h.lookups++
	h.mu.Unlock()
}

// RunHTTP runs the benchmark against the cluster behind cfg.Client: the
// throughput phase (Jobs jobs from Connections concurrent requests), then,
// if asked, the light phase. A bad config is an error saying what to fix;
// jobs the cluster refuses (400, 413) or results that do not arrive within
// ResultTimeout end the run with an error matching ErrHTTPBench. A result
// reader that falls behind the feed's retention (410) resumes from the
// oldest cursor and settles the jobs it may have skipped with GET
// /work/{id}; HTTPResult says how many.
func RunHTTP(ctx context.Context, cfg HTTPConfig) (HTTPResult, error) {
	if err := cfg.Validate(); err != nil {
		return HTTPResult{}, err
	}
	if cfg.ResultTimeout <= 0 {
		cfg.ResultTimeout = 2 * time.Minute
	}
	if cfg.RunID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
		cfg.RunID = hex.EncodeToString(b[:])
	}
	h := &httpRun{sent: map[string]time.Time{}, waiting: map[string]chan struct{}{}, seen: map[string]bool{}, pending: cfg.Jobs, all: make(chan struct{})}
	res := HTTPResult{Mode: cfg.Mode, Jobs: cfg.Jobs, Batch: cfg.Batch, Connections: cfg.Connections, Results: cfg.Results}
	if cfg.Mode != HTTPBatch {
		res.Batch = 1
	}

	// Connections opened for the run must not outlive it: a server shutting
	// down waits for every connection that never carried a request.
	defer cfg.Client.CloseIdleConnections()
	if err := cfg.Client.Healthz(ctx); err != nil {
		return res, fmt.Errorf("%w: %w", ErrHTTPBench, err)
	}
	fctx, stopFeed := context.WithCancel(ctx)
	feedErr := make(chan error, 1)
	feedDone := make(chan struct{})
	defer func() {
		stopFeed()
		<-feedDone // its long poll is over before the run returns
	}()
	if !cfg.Results {
		close(feedDone)
	} else {
		// Start at the feed's end, so a long retained history is not read
		// back and the run's own results are the only ones looked up.
		cursor, err := feedEnd(ctx, cfg.Client)
		if err != nil {
			close(feedDone)
			return res, err
		}
		go func() {
			defer close(feedDone)
			feedErr <- followResults(fctx, cfg.Client, cursor, h, min(settleLookups, cfg.Connections))
		}()
	}

	if cfg.CPU != nil {
		if err := cfg.CPU.Start(ctx); err != nil {
			return res, fmt.Errorf("%w: CPU before the run: %w", ErrHTTPBench, err)
		}
	}
	lats, resent, requests, t0, err := submitAll(ctx, cfg, h)
	if err != nil {
		return res, err
	}
	stopCPU := func() error {
		if cfg.CPU == nil {
			return nil
		}
		us, err := cfg.CPU.Stop(ctx)
		if err != nil {
			return fmt.Errorf("%w: CPU after the run: %w", ErrHTTPBench, err)
		}
		res.CPU = us
		return nil
	}
	res.AckElapsed = time.Since(t0)
	res.Requests, res.Resent = requests, resent
	res.AcksPerSecond = float64(cfg.Jobs) / res.AckElapsed.Seconds()
	res.AckP50, res.AckP90, res.AckP99 = percentile(lats, 50), percentile(lats, 90), percentile(lats, 99)
	res.AckMax = percentile(lats, 100)
	if !cfg.Results {
		return res, stopCPU()
	}

	h.mu.Lock()
	h.armed = true
	if h.pending == 0 {
		close(h.all)
	}
	h.mu.Unlock()
	timer := time.NewTimer(cfg.ResultTimeout)
	defer timer.Stop()
	select {
	case <-h.all:
	case err := <-feedErr:
		return res, fmt.Errorf("%w: reading GET %s: %w", ErrHTTPBench, httpapi.PathResults, err)
	case <-timer.C:
		h.mu.Lock()
		missing := h.pending
		h.mu.Unlock()
		return res, fmt.Errorf("%w: %d of %d results not read back within %v of the last ack (are workers running for type %q? raise --result-timeout for a slow cluster)",
			ErrHTTPBench, missing, cfg.Jobs, cfg.ResultTimeout, cfg.Type)
	case <-ctx.Done():
		return res, ctx.Err()
	}
	if err := stopCPU(); err != nil {
		return res, err
	}
	h.mu.Lock()
	res.Elapsed = h.last.Sub(t0)
	res.Failed = h.failed
	res.Settled = h.settled
	res.FeedGone, res.Lookups = h.gone, h.lookups
	res.ResultP50, res.ResultP99 = percentile(h.resLat, 50), percentile(h.resLat, 99)
	h.resLat = nil
	h.mu.Unlock()
	res.JobsPerSecond = float64(cfg.Jobs) / res.Elapsed.Seconds()
	if res.Failed > 0 {
		return res, fmt.Errorf("%w: %d of %d jobs ended dead or cancelled, not done (do the workers know type %q, and does it take payload %s?)",
			ErrHTTPBench, res.Failed, cfg.Jobs, cfg.Type, cfg.Payload)
	}

	var lightAcks, lightRes []time.Duration
	for i := range cfg.LightJobs {
		id := "hb-" + cfg.RunID + "-l" + strconv.Itoa(i)
		done := make(chan struct{})
		h.send(id, done)
		t := time.Now()
		if _, err := cfg.Client.Submit(ctx, httpapi.SubmitRequest{ID: id, Type: cfg.Type, Payload: cfg.Payload}); err != nil {
			return res, fmt.Errorf("%w: light phase: %w", ErrHTTPBench, err)
		}
		lightAcks = append(lightAcks, time.Since(t))
		select {
		case <-done:
			lightRes = append(lightRes, time.Since(t))
		case err := <-feedErr:
			return res, fmt.Errorf("%w: reading GET %s: %w", ErrHTTPBench, httpapi.PathResults, err)
		case <-time.After(cfg.ResultTimeout):
			return res, fmt.Errorf("%w: light phase: the result of %s was not read back within %v", ErrHTTPBench, id, cfg.ResultTimeout)
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	res.LightAckP50, res.LightAckP99 = percentile(lightAcks, 50), percentile(lightAcks, 99)
	res.LightResultP50, res.LightResultP99 = percentile(lightRes, 50), percentile(lightRes, 99)
	h.mu.Lock()
	res.LightSettled = h.settled - res.Settled
	res.FeedGone, res.Lookups = h.gone, h.lookups
	h.mu.Unlock()
	return res, nil
}

// submitAll runs the throughput phase: it returns the per-request
// latencies, the batch items sent again, the number of requests and when
// the first request went out.
func submitAll(ctx context.Context, cfg HTTPConfig, h *httpRun) (lats []time.Duration, resent, requests int, t0 time.Time, err error) {
	per := 1
	if cfg.Mode == HTTPBatch {
		per = cfg.Batch
	}
	var (
		next     atomic.Int64 // jobs handed out
		nResent  atomic.Int64
		nReq     atomic.Int64
		wg       sync.WaitGroup
		perConn  = make([][]time.Duration, cfg.Connections)
		errOnce  sync.Once
		firstErr error
	)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var group *httpapi.SubmitGroup
	if cfg.Mode == HTTPGrouped {
		group = cfg.Client.NewSubmitGroup(0)
	}
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	t0 = time.Now()
	for c := range cfg.Connections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Single jobs go on a connection of this submitter's own,
			// read on this goroutine (see httpapi.SubmitConn): the
			// transport's per-request goroutine hand-offs were a third
			// of the load generator's CPU.
			var sc *httpapi.SubmitConn
			if cfg.Mode == HTTPSingle {
				var err error
				if sc, err = cfg.Client.NewSubmitConn(); err != nil {
					fail(fmt.Errorf("%w: %w", ErrHTTPBench, err))
					return
				}
				defer func() { _ = sc.Close() }()
			}
			for sctx.Err() == nil {
				hi := next.Add(int64(per))
				lo := hi - int64(per)
				if lo >= int64(cfg.Jobs) {
					return
				}
				hi = min(hi, int64(cfg.Jobs))
				reqs := make([]httpapi.SubmitRequest, 0, hi-lo)
				for i := lo; i < hi; i++ {
					id := "hb-" + cfg.RunID + "-" + strconv.FormatInt(i, 10)
					h.send(id, nil)
					reqs = append(reqs, httpapi.SubmitRequest{ID: id, Type: cfg.Type, Payload: cfg.Payload})
				}
				start := time.Now()
				var err error
				switch cfg.Mode {
				case HTTPSingle:
					nReq.Add(1)
					_, err = sc.Submit(sctx, reqs[0])
				case HTTPGrouped:
					_, err = group.Submit(sctx, reqs[0])
				default:
					var n int
					n, err = submitBatch(sctx, cfg.Client, reqs, &nReq)
					nResent.Add(int64(n))
				}
				if err != nil {
					if sctx.Err() == nil {
						fail(fmt.Errorf("%w: submitting: %w", ErrHTTPBench, err))
					}
					return
				}
				perConn[c] = append(perConn[c], time.Since(start))
				if cfg.OnAck != nil {
					cfg.OnAck(len(reqs))
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, 0, 0, t0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, 0, t0, err
	}
	return slices.Concat(perConn...), int(nResent.Load()), int(nReq.Load()), t0, nil
}

// submitBatch posts reqs until every item is durable: items answered 503
// go again with the same ids after a short pause (the job runs once); any
// other refusal is the benchmark's error. It returns the items sent again.
func submitBatch(ctx context.Context, c *httpapi.Client, reqs []httpapi.SubmitRequest, nReq *atomic.Int64) (resent int, err error) {
	for {
		nReq.Add(1)
		resp, err := c.SubmitMany(ctx, reqs)
		if err != nil {
			return resent, err
		}
		var again []httpapi.SubmitRequest
		for i, it := range resp.Items {
			switch it.Status {
			case http.StatusCreated:
			case http.StatusServiceUnavailable:
				again = append(again, reqs[i])
			default:
				return resent, fmt.Errorf("item %s answered %d: %s", it.ID, it.Status, it.Error)
			}
		}
		if len(again) == 0 {
			return resent, nil
		}
		resent += len(again)
		reqs = again
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return resent, ctx.Err()
		}
	}
}
