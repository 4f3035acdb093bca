package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/httpapi"
	"github.com/foreman-actors/foreman/cluster/node"
)

func TestSubmitStatusCodes(t *testing.T) {
	t.Parallel()
	s := startStack(t,
		withNode(node.WithMasterOptions(master.WithMaxPayload(64), master.WithJobTypes("square", "sleep"))),
		withServer(httpapi.WithMaxBodyBytes(1024)),
	)
	tests := []struct {
		name     string
		body     string
		wantCode int
		wantID   string // "" = any; "gen" = a generated id
		wantErr  string // substring of the error message
	}{
		{name: "ValidWithID", body: `{"id":"codes-1","type":"square","payload":7}`, wantCode: 201, wantID: "codes-1"},
		{name: "ValidWithoutID", body: `{"type":"square","payload":3}`, wantCode: 201, wantID: "gen"},
		{name: "ValidNoPayload", body: `{"id":"codes-2","type":"sleep"}`, wantCode: 201, wantID: "codes-2"},
		{name: "EmptyIDIsGenerated", body: `{"id":"","type":"square","payload":1}`, wantCode: 201, wantID: "gen"},
		{name: "ObjectPayload", body: `{"id":"codes-3","type":"square","payload":{"n": [1, 2]}}`, wantCode: 201, wantID: "codes-3"},
		{name: "EmptyBody", body: ``, wantCode: 400, wantErr: "empty body"},
		{name: "Truncated", body: `{"type":`, wantCode: 400, wantErr: "ends too early"},
		{name: "Malformed", body: `{"type" "square"}`, wantCode: 400, wantErr: "malformed JSON at byte"},
		{name: "UnterminatedPayload", body: `{"type":"square","payload":"7`, wantCode: 400, wantErr: "ends too early"},
		{name: "MissingType", body: `{"payload":7}`, wantCode: 400, wantErr: `missing "type"`},
		{name: "UnknownField", body: `{"type":"square","payld":7}`, wantCode: 400, wantErr: `unknown field "payld"`},
		{name: "WrongFieldType", body: `{"type":7}`, wantCode: 400, wantErr: `field "type" must be a string`},
		{name: "NotAnObject", body: `[1,2]`, wantCode: 400, wantErr: "must be a JSON object"},
		{name: "TrailingData", body: `{"type":"square"} {}`, wantCode: 400, wantErr: "extra data"},
		{name: "ControlCharInID", body: `{"id":"a\u0001b","type":"square"}`, wantCode: 400, wantErr: "printable"},
		{name: "IDTooLong", body: fmt.Sprintf(`{"id":%q,"type":"square"}`, strings.Repeat("x", httpapi.MaxIDLength+1)), wantCode: 400, wantErr: "printable"},
		{name: "UnknownJobType", body: `{"type":"nope"}`, wantCode: 400, wantErr: `unknown job type "nope"`},
		{name: "PayloadOverMasterLimit", body: fmt.Sprintf(`{"type":"square","payload":%q}`, strings.Repeat("p", 100)), wantCode: 413, wantErr: "over the limit of 64"},
		{name: "BodyOverLimit", body: fmt.Sprintf(`{"type":"square","payload":%q}`, strings.Repeat("p", 2000)), wantCode: 413, wantErr: "over the limit of 1024"},
	}
	hexID := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := s.do(t, http.MethodPost, "/work", tc.body)
			require.Equal(t, tc.wantCode, a.code, "body: %s", a.raw)
			if tc.wantErr != "" {
				require.Contains(t, a.body["error"], tc.wantErr)
				require.NotContains(t, a.body["error"], "httpapi:", "the message should not repeat the package prefix")
				require.Len(t, a.body, 1, "an error answer has only the error field")
				return
			}
			id, _ := a.body["id"].(string)
			switch tc.wantID {
			case "gen":
				require.Regexp(t, hexID, id)
			default:
				require.Equal(t, tc.wantID, id)
			}
			require.Equal(t, "/work/"+id, a.header.Get("Location"))
			// Durable means the master knows it now.
			got := s.do(t, http.MethodGet, "/work/"+id, "")
			require.Equal(t, http.StatusOK, got.code, got.raw)
		})
	}
}

func TestSubmitSameIDRunsOnce(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	for i := range 3 {
		a := s.do(t, http.MethodPost, "/work", `{"id":"once","type":"square","payload":9}`)
		require.Equal(t, http.StatusCreated, a.code, "submission %d: %s", i+1, a.raw)
		require.Equal(t, "once", a.body["id"])
	}
	r := s.waitResult(t, "once")
	require.JSONEq(t, "81", string(r.GetResult()))
	// Submitted again after it is done: acknowledged, not run again.
	a := s.do(t, http.MethodPost, "/work", `{"id":"once","type":"square","payload":9}`)
	require.Equal(t, http.StatusCreated, a.code, a.raw)
	got := s.do(t, http.MethodGet, "/work/once", "")
	require.Equal(t, http.StatusOK, got.code)
	require.Equal(t, "done", got.body["status"])
	require.EqualValues(t, 1, got.body["attempts"], "the job ran more than once: %s", got.raw)
	st := s.do(t, http.MethodGet, "/status", "")
	require.EqualValues(t, 1, st.body["queue"].(map[string]any)["accepted_total"], st.raw)
}

func TestSubmitUnavailable(t *testing.T) {
	t.Parallel()
	s := startStack(t, withServer(httpapi.WithSubmitTimeout(200*time.Millisecond), httpapi.WithRetryAfter(2*time.Second)))
	s.journal.stall()
	a := s.do(t, http.MethodPost, "/work", `{"id":"slow","type":"square","payload":4}`)
	require.Equal(t, http.StatusServiceUnavailable, a.code, a.raw)
	require.Equal(t, "2", a.header.Get("Retry-After"))
	require.Contains(t, a.body["error"], `did not acknowledge work "slow" in time`)

	// Once the journal writes again, the same id is accepted and runs once.
	s.journal.release()
	a = s.do(t, http.MethodPost, "/work", `{"id":"slow","type":"square","payload":4}`)
	require.Equal(t, http.StatusCreated, a.code, a.raw)
	r := s.waitResult(t, "slow")
	require.JSONEq(t, "16", string(r.GetResult()))
	got := s.do(t, http.MethodGet, "/work/slow", "")
	require.EqualValues(t, 1, got.body["attempts"], got.raw)
}

func testRegistry(t testing.TB) *worker.Registry {
	t.Helper()
	reg := worker.NewRegistry()
	require.NoError(t, worker.RegisterBuiltins(reg, worker.WithSquareDelay(0, 0)))
	require.NoError(t, reg.Register("text", func(_ context.Context, p []byte) ([]byte, error) {
		return append([]byte("hello "), p...), nil
	}))
	require.NoError(t, reg.Register("fail", func(context.Context, []byte) ([]byte, error) {
		return nil, errors.New("boom")
	}))
	return reg
}

func TestGetWork(t *testing.T) {
	t.Parallel()
	s := startStack(t, withNode(node.WithRegistry(testRegistry(t)), node.WithMasterOptions(master.WithMaxAttempts(1))))
	for _, body := range []string{
		`{"id":"sq","type":"square","payload":7}`,
		`{"id":"txt","type":"text","payload":"x"}`,
		`{"id":"bad","type":"fail"}`,
		`{"id":"a/b c","type":"square","payload":2}`,
	} {
		a := s.do(t, http.MethodPost, "/work", body)
		require.Equal(t, http.StatusCreated, a.code, a.raw)
	}
	s.waitResult(t, "sq")
	s.waitResult(t, "txt")
	s.waitResult(t, "a/b c")
	_, err := s.client(t).Wait(t.Context(), "bad", 10*time.Millisecond)
	require.NoError(t, err)

	tests := []struct {
		name     string
		path     string
		wantCode int
		want     string // JSON the body must equal, or an error substring
	}{
		{name: "DoneJSONResult", path: "/work/sq", wantCode: 200, want: `{"id":"sq","status":"done","type":"square","result":49,"attempts":1}`},
		{name: "DoneTextResult", path: "/work/txt", wantCode: 200, want: `{"id":"txt","status":"done","type":"text","result":"hello \"x\"","attempts":1}`},
		{name: "Dead", path: "/work/bad", wantCode: 200, want: `{"id":"bad","status":"dead","type":"fail","result":null,"attempts":1,"last_error":"boom"}`},
		{name: "EscapedID", path: "/work/a%2Fb%20c", wantCode: 200, want: `{"id":"a/b c","status":"done","type":"square","result":4,"attempts":1}`},
		{name: "Unknown", path: "/work/never", wantCode: 404, want: `work "never" is unknown`},
		{name: "BadID", path: "/work/a%01", wantCode: 400, want: "printable"},
		{name: "NoID", path: "/work/", wantCode: 404, want: "no endpoint GET /work/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := s.do(t, http.MethodGet, tc.path, "")
			require.Equal(t, tc.wantCode, a.code, a.raw)
			if tc.wantCode == 200 {
				if tc.name == "Dead" { // the error text is the worker's, maybe decorated
					require.Contains(t, a.body["last_error"], "boom")
					a.body["last_error"] = "boom"
					a.raw = mustJSON(t, a.body)
				}
				require.JSONEq(t, tc.want, a.raw)
				return
			}
			require.Contains(t, a.body["error"], tc.want)
		})
	}
}

func TestGetWorkAccepted(t *testing.T) {
	t.Parallel()
	s := startStack(t, withWorkers(0))
	a := s.do(t, http.MethodPost, "/work", `{"id":"waiting","type":"square","payload":5}`)
	require.Equal(t, http.StatusCreated, a.code, a.raw)
	got := s.do(t, http.MethodGet, "/work/waiting", "")
	require.Equal(t, http.StatusOK, got.code)
	require.JSONEq(t, `{"id":"waiting","status":"accepted","type":"square","result":null,"attempts":0}`, got.raw)
}

func TestStatus(t *testing.T) {
	t.Parallel()
	s := startStack(t, withWorkers(2), withSQLite())
	a := s.do(t, http.MethodPost, "/work", `{"id":"st","type":"square","payload":1}`)
	require.Equal(t, http.StatusCreated, a.code)
	s.waitResult(t, "st")

	info, err := s.client(t).Status(t.Context())
	require.NoError(t, err)
	sys := s.node.System()
	require.Equal(t, []httpapi.Member{{
		ID: sys.ID, Address: sys.Address(), Roles: []string{httpapi.RoleAll},
		HTTP: s.srv.Addr(), Self: true, Master: true,
	}}, info.Members)
	require.Equal(t, httpapi.MasterInfo{Reachable: true, Address: sys.Address(), Member: sys.ID, Epoch: 1}, info.Master)
	require.Equal(t, httpapi.QueueInfo{Done: 1, AcceptedTotal: 1}, info.Queue)
	require.Equal(t, int64(2), info.Workers.Idle+info.Workers.Busy, "both workers registered: %+v", info.Workers)
}

func TestStatusMasterUnreachable(t *testing.T) {
	t.Parallel()
	s := startStack(t, withServer(httpapi.WithQueryTimeout(200*time.Millisecond)))
	// Stop the master: the members are still listed, the master is not.
	require.NoError(t, s.node.System().Root.StopFuture(s.node.Master()).Wait())
	a := s.do(t, http.MethodGet, "/status", "")
	require.Equal(t, http.StatusOK, a.code, a.raw)
	m := a.body["master"].(map[string]any)
	require.Equal(t, false, m["reachable"])
	require.NotEmpty(t, m["error"])
	require.Len(t, a.body["members"], 1)
	// Work queries now answer 503 with Retry-After.
	w := s.do(t, http.MethodGet, "/work/x", "")
	require.Equal(t, http.StatusServiceUnavailable, w.code, w.raw)
	require.Equal(t, "1", w.header.Get("Retry-After"))
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	tests := []struct {
		name      string
		method    string
		path      string
		wantCode  int
		wantAllow string
		want      string
	}{
		{name: "Healthz", method: "GET", path: "/healthz", wantCode: 200, want: `{"status":"ok"}`},
		{name: "PutOnSubmit", method: "PUT", path: "/work", wantCode: 405, wantAllow: "GET, HEAD, POST"},
		{name: "ListWithoutStatus", method: "GET", path: "/work", wantCode: 400},
		{name: "DeleteWork", method: "DELETE", path: "/work/x", wantCode: 405, wantAllow: "GET, HEAD"},
		{name: "PostStatus", method: "POST", path: "/status", wantCode: 405, wantAllow: "GET, HEAD"},
		{name: "PutHealthz", method: "PUT", path: "/healthz", wantCode: 405, wantAllow: "GET, HEAD"},
		{name: "UnknownPath", method: "GET", path: "/jobs", wantCode: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := s.do(t, tc.method, tc.path, "")
			require.Equal(t, tc.wantCode, a.code, a.raw)
			require.Equal(t, tc.wantAllow, a.header.Get("Allow"))
			if tc.want != "" {
				require.JSONEq(t, tc.want, a.raw)
			} else {
				require.NotEmpty(t, a.body["error"])
			}
		})
	}
}

func TestServerLifecycle(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	t.Run("StartTwice", func(t *testing.T) {
		require.ErrorIs(t, s.srv.Start(t.Context()), httpapi.ErrServerState)
	})
	t.Run("AddressInUse", func(t *testing.T) {
		srv, err := httpapi.New(s.backend, httpapi.WithAddr(s.srv.Addr()), httpapi.WithLogger(s.node.System().Logger()))
		require.NoError(t, err)
		err = srv.Start(t.Context())
		require.ErrorContains(t, err, "cannot listen on "+s.srv.Addr())
		require.Empty(t, srv.Addr())
		require.NoError(t, srv.Shutdown(t.Context()))
	})
	t.Run("ShutdownWithoutStart", func(t *testing.T) {
		srv, err := httpapi.New(s.backend, httpapi.WithLogger(s.node.System().Logger()))
		require.NoError(t, err)
		require.NoError(t, srv.Shutdown(t.Context()))
		require.NoError(t, srv.Shutdown(t.Context()))
		require.ErrorIs(t, srv.Start(t.Context()), httpapi.ErrServerState, "a stopped server does not start again")
	})
	t.Run("ShutdownStopsServing", func(t *testing.T) {
		srv, err := httpapi.New(s.backend, httpapi.WithAddr("127.0.0.1:0"), httpapi.WithLogger(s.node.System().Logger()))
		require.NoError(t, err)
		require.NoError(t, srv.Start(t.Context()))
		addr := srv.Addr()
		c, err := httpapi.NewClient(addr)
		require.NoError(t, err)
		defer c.CloseIdleConnections()
		require.NoError(t, c.Healthz(t.Context()))
		require.NoError(t, srv.Shutdown(t.Context()))
		require.NoError(t, srv.Shutdown(t.Context()), "second Shutdown is a no-op")
		_, err = net.DialTimeout("tcp", addr, testkit.Timeout())
		require.Error(t, err, "the listener is closed")
	})
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts []httpapi.Option
		want string
	}{
		{name: "EmptyAddr", opts: []httpapi.Option{httpapi.WithAddr("")}, want: "empty listen address"},
		{name: "ZeroBody", opts: []httpapi.Option{httpapi.WithMaxBodyBytes(0)}, want: "max body"},
		{name: "ZeroSubmitTimeout", opts: []httpapi.Option{httpapi.WithSubmitTimeout(0)}, want: "submit timeout"},
		{name: "NegativeQueryTimeout", opts: []httpapi.Option{httpapi.WithQueryTimeout(-time.Second)}, want: "query timeout"},
		{name: "SubSecondRetryAfter", opts: []httpapi.Option{httpapi.WithRetryAfter(time.Millisecond)}, want: "retry after"},
		{name: "ZeroIdle", opts: []httpapi.Option{httpapi.WithTimeouts(time.Second, time.Second, 0)}, want: "timeouts"},
		{name: "NilIDGenerator", opts: []httpapi.Option{httpapi.WithIDGenerator(nil)}, want: "id generator"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := httpapi.New(nopBackend{}, tc.opts...)
			require.ErrorIs(t, err, httpapi.ErrInvalidOption)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := httpapi.New(nil)
	require.ErrorIs(t, err, httpapi.ErrInvalidOption)
	_, err = httpapi.NewActorBackend(nil, nil)
	require.ErrorIs(t, err, httpapi.ErrInvalidOption)
}

func TestSubmitChunkedOverLimit(t *testing.T) {
	t.Parallel()
	s := startStack(t, withServer(httpapi.WithMaxBodyBytes(1024)))
	body := fmt.Sprintf(`{"type":"square","payload":%q}`, strings.Repeat("p", 4096))
	// A reader of unknown length: sent chunked, so only MaxBytesReader
	// catches it.
	req, err := http.NewRequest(http.MethodPost, s.base+"/work", io.MultiReader(strings.NewReader(body)))
	require.NoError(t, err)
	resp, err := s.hc.Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	require.Zero(t, req.ContentLength, "unknown length: sent chunked")
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(data), "over the limit of 1024 bytes")
}
