package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/foreman-actors/foreman/messages"
)

// Batch submit: POST /work/batch (issue 17, item 2).
const (
	// PathWorkBatch takes many submissions in one request (POST).
	PathWorkBatch = PathWork + "/batch"
	// MaxBatchItems bounds the items of one POST /work/batch; a larger
	// batch is refused whole with 413 (split it).
	MaxBatchItems = 10_000
	// MaxBatchBodyBytes bounds the body of one POST /work/batch; each item
	// is still bounded by the server's max body (WithMaxBodyBytes).
	MaxBatchBodyBytes = 64 << 20
	// ContentTypeNDJSON is the content type of a body of one JSON object a
	// line.
	ContentTypeNDJSON = "application/x-ndjson"
	// batchParallel bounds the submissions of one batch in flight to the
	// master at once: the backpressure of one batch on the master (the
	// master's journal commits the acceptances in flight together).
	batchParallel = 256
)

// BatchItem is one item's outcome in the answer to POST /work/batch.
type BatchItem struct {
	// ID is the work id (the generated one when the item had none; empty
	// when the item could not be read at all).
	ID string `json:"id"`
	// Status is the HTTP status POST /work would have answered for the
	// item alone: 201 durable (also for a duplicate id, accepted once),
	// 400 invalid, 413 too large, 503 not acknowledged in time (retry it).
	Status int `json:"status"`
	// Error says what is wrong with the item; empty on 201.
	Error string `json:"error,omitempty"`
	// DuplicateOf is set when the item's unique key matched another job
	// (Status 200): that job's id; JobStatus is its status then.
	DuplicateOf string `json:"duplicate_of,omitempty"`
	JobStatus   string `json:"job_status,omitempty"`
}

// BatchResponse is the body of the answer to POST /work/batch: 201 when
// every item is durable, 207 otherwise.
type BatchResponse struct {
	// Items are the outcomes in request order, one per item.
	Items []BatchItem `json:"items"`
	// Accepted counts the items answered 201.
	Accepted int `json:"accepted"`
	// Rejected counts the other items.
	Rejected int `json:"rejected"`
}

// DecodeBatch reads the body of POST /work/batch: a JSON array of the
// objects POST /work takes, or (ndjson) one such object a line, blank
// lines skipped. Each item is validated on its own: a bad item is an entry
// with its error, the others go on. The error is for the whole body: not
// readable, over maxItems (ErrTooLarge), empty (ErrInvalid).
func DecodeBatch(r io.Reader, ndjson bool, maxItems int, maxItemBytes int64) ([]SubmitRequest, []error, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, decodeErr(err)
	}
	var (
		raws   [][]byte
		starts []int64 // offset of each item in body, to name a bad byte's offset
	)
	if ndjson {
		for off := 0; off < len(body); {
			line := body[off:]
			if i := bytes.IndexByte(line, '\n'); i >= 0 {
				line = line[:i]
			}
			start := off
			off += len(line) + 1
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if len(raws) == maxItems {
				return nil, nil, fmt.Errorf("%w: more than %d items in one batch; split it into batches of at most %d", ErrTooLarge, maxItems, maxItems)
			}
			raws, starts = append(raws, line), append(starts, int64(start))
		}
	} else {
		if raws, starts, err = splitArray(body, maxItems); err != nil {
			return nil, nil, err
		}
	}
	if len(raws) == 0 {
		return nil, nil, fmt.Errorf(`%w: empty batch; send a JSON array like [{"type":"square","payload":7}] or one object a line with Content-Type %s`, ErrInvalid, ContentTypeNDJSON)
	}
	reqs := make([]SubmitRequest, len(raws))
	errs := make([]error, len(raws))
	for i, raw := range raws {
		if int64(len(raw)) > maxItemBytes {
			errs[i] = fmt.Errorf("%w: the item is %d bytes, over the limit of %d; send a reference to large data instead", ErrTooLarge, len(raw), maxItemBytes)
			continue
		}
		reqs[i], errs[i] = decodeSubmitBytes(raw)
		var badText *UTF8Error
		if errors.As(errs[i], &badText) { // name the offset in the body too
			errs[i] = fmt.Errorf("%w: %w", ErrInvalid, &UTF8Error{Offset: starts[i] + badText.Offset, Item: i + 1, ItemOffset: badText.Offset})
		}
	}
	return reqs, errs, nil
}

// splitArray splits a JSON array into its elements' raw text and their
// offsets in body.
func splitArray(body []byte, maxItems int) (raws [][]byte, starts []int64, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, decodeErr(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, nil, fmt.Errorf(`%w: the body must be a JSON array like [{"type":"square","payload":7}] (or one object a line with Content-Type %s)`, ErrInvalid, ContentTypeNDJSON)
	}
	for dec.More() {
		if len(raws) == maxItems {
			return nil, nil, fmt.Errorf("%w: more than %d items in one batch; split it into batches of at most %d", ErrTooLarge, maxItems, maxItems)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("item %d: %w", len(raws)+1, decodeErr(err))
		}
		// The decoder stops right after the value, and the raw text is
		// the value without the spaces before it.
		raws, starts = append(raws, raw), append(starts, dec.InputOffset()-int64(len(raw)))
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return nil, nil, decodeErr(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("%w: extra data after the JSON array; send exactly one array", ErrInvalid)
	}
	return raws, starts, nil
}

// handleSubmitBatch: POST /work/batch.
func (s *Server) handleSubmitBatch(w http.ResponseWriter, r *http.Request) {
	ndjson, err := batchContentType(r.Header.Get("Content-Type"))
	if err != nil {
		w.Header().Set("Accept-Post", "application/json, "+ContentTypeNDJSON)
		writeJSON(w, http.StatusUnsupportedMediaType, errorBody{Error: err.Error()})
		return
	}
	if r.ContentLength > MaxBatchBodyBytes {
		s.refuseBody(w, r, r.Body, false, fmt.Errorf("%w: the body is %d bytes, over the batch limit of %d; split it into smaller batches", ErrTooLarge, r.ContentLength, MaxBatchBodyBytes))
		return
	}
	body := r.Body
	r.Body = http.MaxBytesReader(w, body, MaxBatchBodyBytes)
	reqs, errs, err := DecodeBatch(r.Body, ndjson, MaxBatchItems, s.cfg.maxBody)
	if errors.Is(err, ErrTooLarge) {
		s.refuseBody(w, r, body, true, err)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.submitTimeout)
	defer cancel()
	resp := s.submitBatch(ctx, reqs, errs)
	code := http.StatusCreated
	if resp.Rejected > 0 {
		code = http.StatusMultiStatus
	}
	s.log.Debug("batch submitted", "items", len(resp.Items), "accepted", resp.Accepted, "rejected", resp.Rejected)
	writeJSON(w, code, resp)
}

// batchContentType tells NDJSON from a JSON array; no content type is a
// JSON array.
func batchContentType(ct string) (ndjson bool, err error) {
	if ct == "" {
		return false, nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case err != nil:
		return false, fmt.Errorf("unreadable Content-Type %q: %w", ct, err)
	case mt == "application/json":
		return false, nil
	case mt == ContentTypeNDJSON:
		return true, nil
	default:
		return false, fmt.Errorf("Content-Type %q not supported; send application/json (a JSON array) or %s (one object a line)", mt, ContentTypeNDJSON)
	}
}

// submitBatch submits the valid items, each id once (in batches when the
// backend takes them, else at most batchParallel at a time), and answers every item in request order. A duplicate id gets
// the outcome of its first occurrence, as POST /work answers 201 again for
// an id already accepted.
func (s *Server) submitBatch(ctx context.Context, reqs []SubmitRequest, errs []error) BatchResponse {
	items := make([]BatchItem, len(reqs))
	first := make(map[string]int, len(reqs)) // id -> index of its first valid occurrence
	var unique []int
	for i := range reqs {
		if errs[i] != nil {
			continue
		}
		if reqs[i].ID == "" {
			reqs[i].ID = s.cfg.newID()
		}
		if reqs[i].UniqueKey != "" || reqs[i].ConcurrencyKey != "" {
			w := withKeys(&messages.Work{WorkId: reqs[i].ID}, reqs[i])
			s.keyedID(w)
			reqs[i].ID = w.GetWorkId()
		}
		if _, dup := first[reqs[i].ID]; !dup {
			first[reqs[i].ID] = i
			unique = append(unique, i)
		}
	}
	if bb, ok := s.backend.(BatchBackend); ok {
		works := make([]*messages.Work, len(unique))
		for j, i := range unique {
			works[j] = withKeys(reqs[i].work(), reqs[i])
		}
		for j, err := range bb.SubmitMany(ctx, works) {
			errs[unique[j]] = err
		}
	} else {
		var wg sync.WaitGroup
		sem := make(chan struct{}, batchParallel)
		for _, i := range unique {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				q := reqs[i]
				errs[i] = s.backend.Submit(ctx, withKeys(q.work(), q))
			}()
		}
		wg.Wait()
	}
	var out BatchResponse
	for i := range reqs {
		err := errs[i]
		if err == nil {
			if j := first[reqs[i].ID]; j != i {
				err = errs[j]
			}
		}
		items[i] = BatchItem{ID: reqs[i].ID, Status: http.StatusCreated}
		if dup := duplicateOf(err); dup != nil {
			items[i].Status, items[i].DuplicateOf, items[i].JobStatus = http.StatusOK, dup.Of, dupStatus(dup.Status)
			out.Accepted++
			continue
		}
		if err != nil {
			items[i].Status, items[i].Error = errStatus(err)
			out.Rejected++
		} else {
			out.Accepted++
		}
	}
	out.Items = items
	return out
}

// SubmitMany sends reqs to POST /work/batch as one JSON array (at most
// MaxBatchItems) and returns the per-item outcomes in order; items without
// an id get a client-made one, so a retried batch runs each job once. The
// error is for the whole request (unreachable, refused whole).
func (c *Client) SubmitMany(ctx context.Context, reqs []SubmitRequest) (*BatchResponse, error) {
	if len(reqs) > MaxBatchItems {
		return nil, fmt.Errorf("%w: %d items, over the batch limit of %d; split them", ErrInvalid, len(reqs), MaxBatchItems)
	}
	reqs = append([]SubmitRequest(nil), reqs...)
	for i := range reqs {
		if reqs[i].ID == "" {
			reqs[i].ID = c.newID()
		}
		if err := checkSubmitText(reqs[i]); err != nil {
			return nil, fmt.Errorf("item %d: %w", i+1, err)
		}
	}
	body, err := json.Marshal(reqs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return c.postBatch(ctx, body, len(reqs))
}

// postBatch posts body, a JSON array of n submissions, to POST /work/batch
// and returns the per-item outcomes in order.
func (c *Client) postBatch(ctx context.Context, body []byte, n int) (*BatchResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+PathWorkBatch, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("httpapi: POST %s: %w", PathWorkBatch, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	hr, err := c.hc.Do(req)
	if rerr := redirectErr(err); rerr != nil {
		return nil, rerr
	}
	if err != nil {
		return nil, fmt.Errorf("httpapi: cannot reach %s (is a frontend node running there? pick one with --to): %w", c.base, err)
	}
	defer func() { _ = hr.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(hr.Body, MaxBatchBodyBytes))
	if err != nil {
		return nil, fmt.Errorf("httpapi: reading the answer to POST %s: %w", PathWorkBatch, err)
	}
	if hr.StatusCode != http.StatusCreated && hr.StatusCode != http.StatusMultiStatus {
		return nil, answerErr(hr, data)
	}
	var resp BatchResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("%w: the answer to POST %s is not the expected JSON: %w", ErrServer, PathWorkBatch, err)
	}
	if len(resp.Items) != n {
		return nil, fmt.Errorf("%w: the answer to POST %s has %d items for %d sent", ErrServer, PathWorkBatch, len(resp.Items), n)
	}
	return &resp, nil
}
