package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/foreman-actors/foreman/actors/gather"
)

// Bounds of the SubmitGroup's requests.
const (
	// DefaultSubmitGroupsInFlight is how many POST /work/batch requests a
	// SubmitGroup has out at once by default: while they are answered,
	// the submissions made meanwhile gather for the next.
	DefaultSubmitGroupsInFlight = 4
	// submitGroupItems and submitGroupBytes bound one gathered request,
	// far below the server's batch limits (MaxBatchItems,
	// MaxBatchBodyBytes).
	submitGroupItems = 1000
	submitGroupBytes = 4 << 20
)

// SubmitGroup submits single jobs for many goroutines at once: concurrent
// Submit calls travel together in POST /work/batch requests, and each gets
// its own job's answer, as Client.SubmitResult would give it. The first
// call goes at once; those made while the group's requests are out wait
// for one of them to be answered and then go together, so a lone
// submitter waits no longer than with Submit and many concurrent ones cost
// the server one request per group instead of one per job (the frontend's
// CPU per job falls to the batch path's: docs/benchmarks/issue39-cpu.md).
//
// Get one with Client.NewSubmitGroup; it is safe for concurrent use and
// needs no closing.
type SubmitGroup struct {
	c *Client
	g *gather.Gatherer[json.RawMessage, BatchItem]
}

// NewSubmitGroup returns a SubmitGroup posting through c with at most
// inFlight requests out at once (<= 0: DefaultSubmitGroupsInFlight).
func (c *Client) NewSubmitGroup(inFlight int) *SubmitGroup {
	if inFlight <= 0 {
		inFlight = DefaultSubmitGroupsInFlight
	}
	s := &SubmitGroup{c: c}
	s.g = gather.NewGatherer(inFlight, submitGroupItems, submitGroupBytes, s.post)
	return s
}

// Submit posts req with the submissions of other goroutines and returns
// once the job is durable: its id, or for a request with a unique_key that
// matched another job that job's id with DuplicateOf set. A request
// without ID gets one from the Client first, so an item the server answers
// 503 (not acknowledged in time) is sent again with the same id until ctx
// ends: the job runs once. Other failures return at once: an *APIError
// for the item (errors.Is ErrInvalid, ErrTooLarge, ...) or for the whole
// request, or a transport error.
func (s *SubmitGroup) Submit(ctx context.Context, req SubmitRequest) (SubmitResponse, error) {
	var resp SubmitResponse
	_, err := s.c.submit(ctx, req, func(ctx context.Context, body []byte) (string, error) {
		item, err := s.g.Do(ctx, body, len(body))
		if err != nil {
			return "", err
		}
		switch item.Status {
		case http.StatusCreated:
			resp = SubmitResponse{ID: item.ID}
		case http.StatusOK:
			resp = SubmitResponse{ID: item.DuplicateOf, DuplicateOf: item.DuplicateOf, Status: item.JobStatus}
		default:
			return "", &APIError{StatusCode: item.Status, Message: item.Error}
		}
		return resp.ID, nil
	})
	return resp, err
}

// Waiting is how many submissions wait for a request to go: those made
// while the group's requests were all out.
func (s *SubmitGroup) Waiting() int { return s.g.Waiting() }

// post sends one gathered group, the submissions' encoded bodies, as one
// JSON array.
func (s *SubmitGroup) post(ctx context.Context, bodies []json.RawMessage) ([]BatchItem, error) {
	size := 2
	for _, b := range bodies {
		size += len(b) + 1
	}
	var buf bytes.Buffer
	buf.Grow(size)
	buf.WriteByte('[')
	for i, b := range bodies {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(b)
	}
	buf.WriteByte(']')
	resp, err := s.c.postBatch(ctx, buf.Bytes(), len(bodies))
	if err != nil {
		return nil, err
	}
	return resp.Items, nil
}
