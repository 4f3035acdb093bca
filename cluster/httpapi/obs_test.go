package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// The stack's counting backend passes the dashboard's requests on.

func (b *countingBackend) ListWork(ctx context.Context, status messages.WorkStatus, limit int) (*messages.WorkList, error) {
	return b.Backend.(httpapi.Lister).ListWork(ctx, status, limit)
}

func (b *countingBackend) Resubmit(ctx context.Context, id string) error {
	return b.Backend.(httpapi.Lister).Resubmit(ctx, id)
}

// flakyRegistry has "flaky": a job that fails permanently on its first run
// and succeeds after, so that it dies once and its re-submission completes.
func flakyRegistry(t testing.TB) *worker.Registry {
	t.Helper()
	reg := testRegistry(t)
	var runs atomic.Int64
	require.NoError(t, reg.Register("flaky", func(_ context.Context, p []byte) ([]byte, error) {
		if runs.Add(1) == 1 {
			return nil, fmt.Errorf("%w: first run fails for good", worker.ErrBadPayload)
		}
		return p, nil
	}))
	return reg
}

// scrape reads one sample of the text format ("name{labels}"), 0 if absent.
func scrape(t testing.TB, s *stack, sample string) float64 {
	t.Helper()
	a := s.get(t, httpapi.PathMetrics)
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`)
	m := re.FindStringSubmatch(a)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

func (s *stack) get(t testing.TB, path string) string {
	t.Helper()
	resp, err := s.hc.Get(s.base + path)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, body)
	return string(body)
}

// TestDashboardAPIAndMetrics runs jobs on a real node with a SQLite journal
// and checks the dashboard's API and that the metrics move.
func TestDashboardAPIAndMetrics(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	s := startStack(t, withSQLite(), withServer(httpapi.WithMetrics(m)),
		withNode(node.WithRegistry(flakyRegistry(t)), node.WithMetrics(m), node.WithMasterOptions(master.WithMaxAttempts(3))))
	before := scrape(t, s, `foreman_jobs_accepted_total{job_type="square"}`)
	require.Zero(t, before)

	for i := range 5 {
		a := s.do(t, http.MethodPost, httpapi.PathWork, fmt.Sprintf(`{"id":"sq%d","type":"square","payload":%d}`, i, i))
		require.Equal(t, http.StatusCreated, a.code, a.raw)
	}
	a := s.do(t, http.MethodPost, httpapi.PathWork, `{"id":"f1","type":"flaky","payload":"x"}`)
	require.Equal(t, http.StatusCreated, a.code, a.raw)

	// The flaky job dies at once (a permanent failure) and is listed.
	var dead httpapi.WorkList
	require.Eventually(t, func() bool {
		require.NoError(t, json.Unmarshal([]byte(s.get(t, "/work?status=dead&limit=10")), &dead))
		return dead.Total == 1
	}, 4*testkit.Timeout(), 10*time.Millisecond)
	require.Equal(t, "f1", dead.Works[0].ID)
	require.Equal(t, "flaky", dead.Works[0].Type)
	require.NotNil(t, dead.Works[0].FinishedAt)
	require.Contains(t, dead.Works[0].LastError, "first run fails")

	require.Equal(t, http.StatusNotFound, s.do(t, http.MethodPost, "/work/nope/resubmit", "").code)
	require.Equal(t, http.StatusBadRequest, s.do(t, http.MethodGet, "/work?status=weird", "").code)
	require.Equal(t, http.StatusBadRequest, s.do(t, http.MethodGet, "/work?status=dead&limit=0", "").code)
	a = s.do(t, http.MethodPost, "/work/f1/resubmit", "")
	require.Equal(t, http.StatusAccepted, a.code, a.raw)
	s.waitResult(t, "f1")

	// Its history tells the whole story, the re-submission included.
	var info httpapi.WorkInfo
	require.NoError(t, json.Unmarshal([]byte(s.get(t, "/work/f1?history=true")), &info))
	require.Equal(t, httpapi.StatusDone, info.Status)
	var events []string
	for _, h := range info.History {
		events = append(events, h.Event)
	}
	require.Equal(t, []string{"accepted", "started", "failed", "dead", "accepted", "started", "completed"}, events)
	require.NotEmpty(t, info.History[1].Worker)
	require.Equal(t, http.StatusConflict, s.do(t, http.MethodPost, "/work/f1/resubmit", "").code, "a done job is not re-submitted")

	var done httpapi.WorkList
	require.Eventually(t, func() bool {
		require.NoError(t, json.Unmarshal([]byte(s.get(t, "/work?status=done&limit=3")), &done))
		return done.Total == 6
	}, 4*testkit.Timeout(), 10*time.Millisecond)
	require.Len(t, done.Works, 3)

	// The metrics moved with the jobs.
	require.Eventually(t, func() bool {
		return scrape(t, s, `foreman_jobs_completed_total{job_type="square"}`) == 5
	}, 4*testkit.Timeout(), 10*time.Millisecond)
	require.InDelta(t, 5, scrape(t, s, `foreman_jobs_accepted_total{job_type="square"}`), 0)
	require.InDelta(t, 2, scrape(t, s, `foreman_jobs_accepted_total{job_type="flaky"}`), 0, "accepted, then re-submitted")
	require.InDelta(t, 1, scrape(t, s, `foreman_jobs_dead_total{job_type="flaky"}`), 0)
	require.InDelta(t, 7, scrape(t, s, `foreman_submit_ack_seconds_count{outcome="ok"}`), 0, "six submissions and one re-submission")
	require.InDelta(t, 6, scrape(t, s, `foreman_submit_result_seconds_count`), 0, "five squares and the flaky job's second life")
	require.Positive(t, scrape(t, s, `foreman_master_epoch`))
	require.InDelta(t, 6, scrape(t, s, `foreman_queue_jobs{state="done"}`), 0)
	require.InDelta(t, 1, scrape(t, s, `foreman_workers{state="idle"}`), 0)
	require.Contains(t, s.get(t, httpapi.PathMetrics), `foreman_actor_mailbox_messages{actor="master"}`)
}

// TestOpenAPICoversRoutes: every route the server serves is in the OpenAPI
// document and every operation of the document is served.
func TestOpenAPICoversRoutes(t *testing.T) {
	t.Parallel()
	srv, err := httpapi.New(nopBackend{}, httpapi.WithMetrics(metrics.New()))
	require.NoError(t, err)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(httpapi.OpenAPI, &doc))
	require.Equal(t, "3.0.3", doc.OpenAPI)
	var documented []string
	for p, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+p)
		}
	}
	var served []string
	for _, r := range srv.Routes() {
		if r.Method == "" {
			continue // a 405/404 fallback, not an operation
		}
		served = append(served, strings.ReplaceAll(r.Pattern(), "...}", "}"))
	}
	sort.Strings(documented)
	sort.Strings(served)
	require.Equal(t, served, documented)

	// And the document is what the server serves.
	rec := &recorder{header: http.Header{}}
	req, err := http.NewRequest(http.MethodGet, httpapi.PathOpenAPI, nil)
	require.NoError(t, err)
	srv.Handler().ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.code)
	require.JSONEq(t, string(httpapi.OpenAPI), rec.body.String())
}

// TestUIFiles: the dashboard's files are served with a strict CSP and
// reference nothing outside the node.
func TestUIFiles(t *testing.T) {
	t.Parallel()
	srv, err := httpapi.New(nopBackend{})
	require.NoError(t, err)
	for _, p := range []string{"/ui", "/ui/", "/ui/app.js", "/ui/app.css", "/ui/missing.js"} {
		rec := &recorder{header: http.Header{}}
		req, err := http.NewRequest(http.MethodGet, p, nil)
		require.NoError(t, err)
		srv.Handler().ServeHTTP(rec, req)
		if p == "/ui/missing.js" {
			require.Equal(t, http.StatusNotFound, rec.code, p)
			continue
		}
		require.Equal(t, http.StatusOK, rec.code, p)
		require.Contains(t, rec.header.Get("Content-Security-Policy"), "default-src 'self'", p)
		require.NotRegexp(t, `https?://`, rec.body.String(), "%s fetches nothing from elsewhere", p)
	}
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   strings.Builder
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) { r.code = code }
