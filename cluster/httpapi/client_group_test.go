package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// countingTransport is the real transport, counting the requests it
// carries.
type countingTransport struct {
	http.RoundTripper
	n atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.RoundTripper.RoundTrip(r)
}

// TestSubmitGroup: while the group's one request is out (the master's
// journal is held back), twenty submissions from as many goroutines wait,
// then go together in one POST /work/batch; each gets its own answer: the
// id of its durable job, the holder of a unique key it matched, or the
// refusal of its bad item alone.
func TestSubmitGroup(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	tr := &countingTransport{RoundTripper: http.DefaultTransport.(*http.Transport).Clone()}
	c := s.client(t, httpapi.WithHTTPClient(&http.Client{Transport: tr}))
	g := c.NewSubmitGroup(1)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Timeout())
	defer cancel()

	type res struct {
		resp httpapi.SubmitResponse
		err  error
	}
	submit := func(req httpapi.SubmitRequest) chan res {
		out := make(chan res, 1)
		go func() {
			resp, err := g.Submit(ctx, req)
			out <- res{resp, err}
		}()
		return out
	}
	s.journal.stall()
	first := submit(httpapi.SubmitRequest{ID: "first", Type: "square", Payload: json.RawMessage("3"), UniqueKey: "k", UniqueFor: "1h"})
	require.Eventually(t, func() bool { return tr.n.Load() == 1 }, testkit.Timeout(), time.Millisecond)
	var rest []chan res
	for i := range 18 {
		rest = append(rest, submit(httpapi.SubmitRequest{ID: fmt.Sprint("job-", i), Type: "square", Payload: json.RawMessage(fmt.Sprint(i))}))
	}
	bad := submit(httpapi.SubmitRequest{ID: "bad", Payload: json.RawMessage("1")}) // no type
	dup := submit(httpapi.SubmitRequest{ID: "second", Type: "square", Payload: json.RawMessage("4"), UniqueKey: "k", UniqueFor: "1h"})
	require.Eventually(t, func() bool { return g.Waiting() == 20 }, testkit.Timeout(), time.Millisecond)
	require.EqualValues(t, 1, tr.n.Load(), "nothing else went while the first request was out")
	s.journal.release()

	r := <-first
	require.NoError(t, r.err)
	require.Equal(t, "first", r.resp.ID)
	for i, ch := range rest {
		r := <-ch
		require.NoError(t, r.err)
		require.Equal(t, fmt.Sprint("job-", i), r.resp.ID)
	}
	r = <-bad
	require.True(t, errors.Is(r.err, httpapi.ErrInvalid), "%v", r.err)
	r = <-dup
	require.NoError(t, r.err)
	require.Equal(t, httpapi.SubmitResponse{ID: "first", DuplicateOf: "first", Status: r.resp.Status}, r.resp)
	require.EqualValues(t, 2, tr.n.Load(), "the twenty went in one request")
	require.JSONEq(t, "49", string(s.result(t, "job-7")))
}
