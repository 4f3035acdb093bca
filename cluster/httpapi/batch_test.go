package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// TestDecodeBatch: a JSON array or NDJSON; each item validated on its own;
// whole-body errors for empty, too many and unreadable bodies.
func TestDecodeBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		body     string
		ndjson   bool
		wantErr  error  // whole body
		wantItem []bool // per item: valid?
	}{
		{name: "array", body: `[{"type":"square","payload":1},{"id":"b","type":"square","payload":2}]`, wantItem: []bool{true, true}},
		{name: "ndjson", body: "{\"type\":\"square\",\"payload\":1}\n\n{\"id\":\"b\",\"type\":\"square\"}\n", ndjson: true, wantItem: []bool{true, true}},
		{name: "mixed array", body: `[{"type":"square"},{"payload":2},{"type":"square","bogus":1},{"id":"x","type":"square"}]`, wantItem: []bool{true, false, false, true}},
		{name: "mixed ndjson", body: "{\"type\":\"square\"}\nnot json\n{\"type\":7}\n{\"type\":\"square\"}", ndjson: true, wantItem: []bool{true, false, false, true}},
		{name: "duplicates are items", body: `[{"id":"d","type":"square"},{"id":"d","type":"square"}]`, wantItem: []bool{true, true}},
		{name: "empty array", body: `[]`, wantErr: httpapi.ErrInvalid},
		{name: "empty body", body: ``, wantErr: httpapi.ErrInvalid},
		{name: "empty ndjson", body: "\n\n", ndjson: true, wantErr: httpapi.ErrInvalid},
		{name: "object not array", body: `{"type":"square"}`, wantErr: httpapi.ErrInvalid},
		{name: "broken array", body: `[{"type":"square"},`, wantErr: httpapi.ErrInvalid},
		{name: "extra after array", body: `[{"type":"square"}] []`, wantErr: httpapi.ErrInvalid},
		{name: "too many", body: `[{"type":"a"},{"type":"b"},{"type":"c"},{"type":"d"},{"type":"e"}]`, wantErr: httpapi.ErrTooLarge},
		{name: "too many ndjson", body: strings.Repeat("{\"type\":\"a\"}\n", 5), ndjson: true, wantErr: httpapi.ErrTooLarge},
		{name: "item too large", body: `[{"type":"square","payload":"` + strings.Repeat("x", 200) + `"}]`, wantItem: []bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reqs, errs, err := httpapi.DecodeBatch(strings.NewReader(tc.body), tc.ndjson, 4, 100)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Len(t, reqs, len(tc.wantItem))
			for i, ok := range tc.wantItem {
				if ok {
					require.NoError(t, errs[i], "item %d", i)
				} else {
					require.Error(t, errs[i], "item %d", i)
				}
			}
		})
	}
}

func (s *stack) post(t testing.TB, path, ct, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.base+path, strings.NewReader(body))
	require.NoError(t, err)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := s.hc.Do(req)
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	require.NoError(t, err)
	a := answer{code: resp.StatusCode, header: resp.Header, raw: buf.String()}
	_ = json.Unmarshal(buf.Bytes(), &a.body)
	return a
}

// TestSubmitBatchEndToEnd: a real node behind the HTTP server; good items
// run, bad ones are answered in their slot, duplicates run once.
func TestSubmitBatchEndToEnd(t *testing.T) {
	t.Parallel()
	s := startStack(t, withWorkers(2))

	a := s.post(t, httpapi.PathWorkBatch, "application/json",
		`[{"id":"b1","type":"square","payload":3},{"payload":4},{"id":"b1","type":"square","payload":3},{"id":"b2","type":"square","payload":5}]`)
	require.Equal(t, http.StatusMultiStatus, a.code, a.raw)
	var resp httpapi.BatchResponse
	require.NoError(t, json.Unmarshal([]byte(a.raw), &resp))
	require.Equal(t, 3, resp.Accepted)
	require.Equal(t, 1, resp.Rejected)
	require.Equal(t, []int{201, 400, 201, 201}, []int{resp.Items[0].Status, resp.Items[1].Status, resp.Items[2].Status, resp.Items[3].Status})
	require.Equal(t, "b1", resp.Items[0].ID)
	require.Equal(t, "b1", resp.Items[2].ID)
	require.Contains(t, resp.Items[1].Error, `missing "type"`)
	require.JSONEq(t, "9", string(s.result(t, "b1")))
	require.JSONEq(t, "25", string(s.result(t, "b2")))

	// NDJSON, all good, one id already accepted by the first batch: 201.
	a = s.post(t, httpapi.PathWorkBatch, httpapi.ContentTypeNDJSON, "{\"id\":\"b1\",\"type\":\"square\",\"payload\":3}\n{\"id\":\"b3\",\"type\":\"square\",\"payload\":6}\n")
	require.Equal(t, http.StatusCreated, a.code, a.raw)
	require.JSONEq(t, "36", string(s.result(t, "b3")))
	got := s.do(t, http.MethodGet, "/work/b1", "")
	require.EqualValues(t, 1, got.body["attempts"], "b1 ran more than once: %s", got.raw)
	st := s.do(t, http.MethodGet, "/status", "")
	require.EqualValues(t, 3, st.body["queue"].(map[string]any)["accepted_total"], st.raw)

	// Whole-request errors.
	for _, tc := range []struct {
		ct, body string
		code     int
	}{
		{"text/plain", `[{"type":"square"}]`, http.StatusUnsupportedMediaType},
		{"application/json", `[]`, http.StatusBadRequest},
		{"application/json", `[{"type":"square"}`, http.StatusBadRequest},
		{"application/json", "[" + strings.Repeat(`{"type":"square"},`, httpapi.MaxBatchItems) + `{"type":"square"}]`, http.StatusRequestEntityTooLarge},
	} {
		a := s.post(t, httpapi.PathWorkBatch, tc.ct, tc.body)
		require.Equal(t, tc.code, a.code, a.raw)
		require.NotEmpty(t, a.body["error"], a.raw)
	}
	a = s.do(t, http.MethodPut, httpapi.PathWorkBatch, "")
	require.Equal(t, http.StatusMethodNotAllowed, a.code)
	require.Equal(t, "GET, HEAD, POST", a.header.Get("Allow"))
}

// TestClientSubmitMany: the Go client's batch, one bad item.
func TestClientSubmitMany(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	c := s.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	var reqs []httpapi.SubmitRequest
	for i := range 50 {
		reqs = append(reqs, httpapi.SubmitRequest{Type: "square", Payload: json.RawMessage(fmt.Sprint(i))})
	}
	reqs[7].Type = ""
	resp, err := c.SubmitMany(ctx, reqs)
	require.NoError(t, err)
	require.Len(t, resp.Items, 50)
	require.Equal(t, 49, resp.Accepted)
	require.Equal(t, http.StatusBadRequest, resp.Items[7].Status)
	require.JSONEq(t, "4", string(s.result(t, resp.Items[2].ID)))

	_, err = c.SubmitMany(ctx, make([]httpapi.SubmitRequest, httpapi.MaxBatchItems+1))
	require.True(t, errors.Is(err, httpapi.ErrInvalid), "%v", err)
}

// result polls GET /work/{id} until the work is done and returns its result
// (waitResult reads a shared feed and drops the results it skips).
func (s *stack) result(t testing.TB, id string) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*testkit.Timeout())
	defer cancel()
	info, err := s.client(t).Wait(ctx, id, 10*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, httpapi.StatusDone, info.Status, "%+v", info)
	return info.Result
}
