package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/node"
	"github.com/foreman-actors/foreman/messages"
)

// stack is a real all-in-one node (master, workers, frontend client) behind
// a real HTTP server on a loopback port.
type stack struct {
	node    *node.Local
	journal *stallJournal
	backend *countingBackend
	srv     *httpapi.Server
	base    string // http://127.0.0.1:PORT
	hc      *http.Client
	results chan *messages.WorkResult
}

type stackConfig struct {
	workers  int
	nodeOpts []node.LocalOption
	srvOpts  []httpapi.Option
	sqlite   bool
}

type stackOption func(*stackConfig)

func withWorkers(k int) stackOption { return func(c *stackConfig) { c.workers = k } }
func withNode(o ...node.LocalOption) stackOption {
	return func(c *stackConfig) { c.nodeOpts = append(c.nodeOpts, o...) }
}
func withServer(o ...httpapi.Option) stackOption {
	return func(c *stackConfig) { c.srvOpts = append(c.srvOpts, o...) }
}
func withSQLite() stackOption { return func(c *stackConfig) { c.sqlite = true } }

// startStack starts a node with a memory (or SQLite) journal that tests can
// stall, and the server on 127.0.0.1:0; everything stops in t.Cleanup.
func startStack(t testing.TB, opts ...stackOption) *stack {
	t.Helper()
	cfg := stackConfig{workers: 1}
	for _, o := range opts {
		o(&cfg)
	}
	sys := testkit.NewSystem(t)
	var inner persistence.Journal
	if !cfg.sqlite {
		inner = journal.NewMemory()
	} else {
		j, err := journal.OpenSQLite(t.TempDir() + "/journal.db")
		require.NoError(t, err)
		inner = j
	}
	t.Cleanup(func() { require.NoError(t, inner.Close()) }) // after the node stopped
	jr := &stallJournal{Journal: inner}
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	nopts := append([]node.LocalOption{
		node.WithActorSystem(sys), node.WithJournal(jr), node.WithLogger(sys.Logger()),
		node.WithWorkers(cfg.workers), node.WithSquareDelay(0, 0),
	}, cfg.nodeOpts...)
	results := make(chan *messages.WorkResult, 4096)
	sub := sys.EventStream.Subscribe(func(evt any) {
		if r, ok := evt.(*messages.WorkResult); ok {
			select {
			case results <- r:
			default:
			}
		}
	})
	t.Cleanup(func() { sys.EventStream.Unsubscribe(sub) })
	n, err := node.StartLocal(ctx, nopts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		jr.release() // a stalled journal would hold the master's stop
		sctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
		defer cancel()
		require.NoError(t, n.Stop(sctx))
	})
	ab, err := httpapi.NewActorBackend(n.Client(), httpapi.LocalMembers(n.System()))
	require.NoError(t, err)
	cb := &countingBackend{Backend: ab, submits: make(chan struct{}, 1024)}
	srv, err := httpapi.New(cb, append([]httpapi.Option{httpapi.WithAddr("127.0.0.1:0"), httpapi.WithLogger(sys.Logger())}, cfg.srvOpts...)...)
	require.NoError(t, err)
	require.NoError(t, srv.Start(ctx))
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 4 * testkit.Timeout()}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		sctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
		defer cancel()
		require.NoError(t, srv.Shutdown(sctx))
	})
	return &stack{node: n, journal: jr, backend: cb, srv: srv, base: "http://" + srv.Addr(), hc: hc, results: results}
}

// client returns an httpapi.Client of the stack, closed in t.Cleanup.
func (s *stack) client(t testing.TB, opts ...httpapi.ClientOption) *httpapi.Client {
	t.Helper()
	c, err := httpapi.NewClient(s.srv.Addr(), opts...)
	require.NoError(t, err)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// answer is one HTTP answer, its body decoded as a JSON object when it is one.
type answer struct {
	code   int
	header http.Header
	raw    string
	body   map[string]any
}

func (s *stack) do(t testing.TB, method, path, body string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	require.NoError(t, err)
	resp, err := s.hc.Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := answer{code: resp.StatusCode, header: resp.Header, raw: string(data)}
	if len(bytes.TrimSpace(data)) > 0 {
		require.NoError(t, json.Unmarshal(data, &a.body), "answer %d is not JSON: %s", resp.StatusCode, data)
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	}
	return a
}

// waitResult waits until the master published the result of work id (after
// its completion is durable).
func (s *stack) waitResult(t testing.TB, id string) *messages.WorkResult {
	t.Helper()
	timeout := time.After(4 * testkit.Timeout())
	for {
		select {
		case r := <-s.results:
			if r.GetWorkId() == id {
				return r
			}
		case <-timeout:
			t.Fatalf("no result for work %q within %v", id, 4*testkit.Timeout())
			return nil
		}
	}
}

// stallJournal is a real journal whose appends a test can hold back, to make
// the real master miss its acknowledgement deadline.
type stallJournal struct {
	persistence.Journal
	mu      sync.Mutex
	stalled bool
	parked  []func()
}

func (j *stallJournal) AppendAsync(stream string, epoch int64, events []persistence.Event, done func(error)) {
	j.mu.Lock()
	if j.stalled {
		j.parked = append(j.parked, func() { j.Journal.AppendAsync(stream, epoch, events, done) })
		j.mu.Unlock()
		return
	}
	j.mu.Unlock()
	j.Journal.AppendAsync(stream, epoch, events, done)
}

func (j *stallJournal) stall() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.stalled = true
}

// release lets parked appends through, in order, and stops stalling.
func (j *stallJournal) release() {
	j.mu.Lock()
	parked := j.parked
	j.parked, j.stalled = nil, false
	j.mu.Unlock()
	for _, f := range parked {
		f()
	}
}

// countingBackend is the real backend, signalling each Submit it finished.
type countingBackend struct {
	httpapi.Backend
	submits chan struct{}
}

func (b *countingBackend) Submit(ctx context.Context, w *messages.Work) error {
	err := b.Backend.Submit(ctx, w)
	select {
	case b.submits <- struct{}{}:
	default:
	}
	return err
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// nopBackend is only for tests that never reach the backend (option
// validation).
type nopBackend struct{}

func (nopBackend) Submit(context.Context, *messages.Work) error { return nil }
func (nopBackend) WorkStatus(context.Context, string) (*messages.WorkStatusReply, error) {
	return &messages.WorkStatusReply{}, nil
}
func (nopBackend) Status(context.Context) (*httpapi.StatusInfo, error) {
	return &httpapi.StatusInfo{}, nil
}
