package httpapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/actors/tracing"
)

// Defaults of the Client.
const (
	// DefaultClientAddr is the address the Client and the foreman CLI use
	// when none is given: frontend node 3001's HTTP API.
	DefaultClientAddr = "127.0.0.1:8001"
	// DefaultPollInterval is how often [Client.Wait] asks about a work.
	DefaultPollInterval = 200 * time.Millisecond
	// DefaultMaxIdleConns is how many keep-alive connections the Client's
	// own transport keeps to the server.
	DefaultMaxIdleConns = 64
	// maxAnswerBytes bounds how much of an answer the Client reads.
	maxAnswerBytes = 4 << 20
)

// ClientOption configures [NewClient].
type ClientOption func(*Client)

// WithHTTPClient sets the http.Client (default: one with its own transport,
// so CloseIdleConnections affects only this Client).
func WithHTTPClient(hc *http.Client) ClientOption { return func(c *Client) { c.hc = hc } }

// WithClientIDGenerator sets how the Client names work submitted without an
// id (default NewID).
func WithClientIDGenerator(fn func() string) ClientOption { return func(c *Client) { c.newID = fn } }

// Client is a Go client of the HTTP API, used by `foreman submit` and
// `foreman status`. It is safe for concurrent use.
type Client struct {
	base   string
	hc     *http.Client
	newID  func() string
	token  string      // WithToken
	tlsCfg *tls.Config // WithTLSConfig
	// ownTransport: hc is the Client's own (no WithHTTPClient), so a
	// SubmitConn may dial the server the same way.
	ownTransport bool
}

// NewClient returns a client of the API at addr: host:port (e.g.
// DefaultClientAddr) or an http(s) URL.
func NewClient(addr string, opts ...ClientOption) (*Client, error) {
	base, err := baseURL(addr)
	if err != nil {
		return nil, err
	}
	c := &Client{base: base, newID: NewID}
	for _, o := range opts {
		o(c)
	}
	if c.hc != nil && c.tlsCfg != nil {
		return nil, fmt.Errorf("%w: WithTLSConfig and WithHTTPClient together; set the TLS config on your http.Client's transport", ErrInvalidOption)
	}
	if c.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// The default keeps 2 idle connections per host: concurrent
		// submitters would open a new connection for most requests.
		tr.MaxIdleConnsPerHost = DefaultMaxIdleConns
		tr.TLSClientConfig = c.tlsCfg
		c.hc = &http.Client{Transport: tr}
		c.ownTransport = true
	}
	if err := c.withBearer(); err != nil {
		return nil, err
	}
	if c.newID == nil {
		return nil, fmt.Errorf("%w: nil id generator", ErrInvalidOption)
	}
	return c, nil
}

func baseURL(addr string) (string, error) {
	raw := strings.TrimSpace(addr)
	if raw == "" {
		return "", fmt.Errorf("%w: empty address; give host:port such as %s", ErrInvalidOption, DefaultClientAddr)
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%w: address %q is not host:port or an http(s) URL (example: %s)", ErrInvalidOption, addr, DefaultClientAddr)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// Base returns the API's base URL, e.g. "http://127.0.0.1:8001".
func (c *Client) Base() string { return c.base }

// CloseIdleConnections closes the Client's idle keep-alive connections.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// Submit posts req and returns the work id once the work is durable. A
// request without ID gets one from the Client before the first attempt, so
// answers 503 (the master did not acknowledge in time) are retried after
// the server's Retry-After with the same id until ctx ends: the job runs
// once. Other failures return at once: an *APIError (errors.Is ErrInvalid,
// ErrTooLarge, ...) or a transport error.
func (c *Client) Submit(ctx context.Context, req SubmitRequest) (string, error) {
	resp, err := c.SubmitResult(ctx, req)
	return resp.ID, err
}

// SubmitResult is Submit with the whole answer: for a request with a
// unique_key that matched another job, ID is that job's and DuplicateOf
// is set (the server answered 200, and nothing new runs).
func (c *Client) SubmitResult(ctx context.Context, req SubmitRequest) (SubmitResponse, error) {
	var resp SubmitResponse
	_, err := c.submit(ctx, req, func(ctx context.Context, body []byte) (string, error) {
		resp = SubmitResponse{}
		err := c.do(ctx, http.MethodPost, PathWork, body, http.StatusCreated, &resp)
		return resp.ID, err
	})
	return resp, err
}

// submit gives req an id when it has none, encodes it and posts it with
// post until an answer other than 503, waiting the answer's Retry-After
// (at least 100 ms) between tries: the same id each time, so the job runs
// once. Client.Submit and SubmitConn.Submit differ only in post.
func (c *Client) submit(ctx context.Context, req SubmitRequest, post func(ctx context.Context, body []byte) (string, error)) (string, error) {
	if req.ID == "" {
		req.ID = c.newID()
	}
	if err := checkSubmitText(req); err != nil {
		return "", err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for {
		id, err := post(ctx, body)
		var apiErr *APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable {
			if err != nil {
				return "", err
			}
			return id, nil
		}
		t := time.NewTimer(max(apiErr.RetryAfter, 100*time.Millisecond))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("%w (gave up retrying: %w)", err, ctx.Err())
		}
	}
}

// Work returns what the master knows about one work; an unknown id is an
// *APIError matching ErrNotFound.
func (c *Client) Work(ctx context.Context, id string) (*WorkInfo, error) {
	var info WorkInfo
	if err := c.do(ctx, http.MethodGet, PathWork+"/"+url.PathEscape(id), nil, http.StatusOK, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// Wait polls the work every interval (DefaultPollInterval when 0) until it
// is done, dead or cancelled, and returns its last state; it returns early with the
// error when ctx ends or a query fails with anything but 503.
func (c *Client) Wait(ctx context.Context, id string, interval time.Duration) (*WorkInfo, error) {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	for {
		info, err := c.Work(ctx, id)
		switch {
		case err == nil && (info.Status == StatusDone || info.Status == StatusDead || info.Status == StatusCancelled):
			return info, nil
		case err != nil && !errors.Is(err, ErrUnavailable):
			return info, err
		}
		t := time.NewTimer(interval)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			if err == nil {
				err = fmt.Errorf("work %q is still %s", id, info.Status)
			}
			return info, fmt.Errorf("httpapi: waiting for work %q: %w (%w)", id, ctx.Err(), err)
		}
	}
}

// Status returns the cluster overview of GET /status.
func (c *Client) Status(ctx context.Context) (*StatusInfo, error) {
	var info StatusInfo
	if err := c.do(ctx, http.MethodGet, PathStatus, nil, http.StatusOK, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// Healthz returns nil when the server answers GET /healthz with 200.
func (c *Client) Healthz(ctx context.Context) error {
	var v map[string]string
	return c.do(ctx, http.MethodGet, PathHealthz, nil, http.StatusOK, &v)
}

// do sends one request and decodes a want answer into out, or returns an
// *APIError for any other status.
func (c *Client) do(ctx context.Context, method, path string, body []byte, want int, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("httpapi: %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if parent := tracing.Parent(ctx); parent != "" { // the caller's trace goes on at the server
		req.Header.Set(traceParentHeader, parent)
	}
	resp, err := c.hc.Do(req)
	if rerr := redirectErr(err); rerr != nil {
		return rerr
	}
	if err != nil {
		return fmt.Errorf("httpapi: cannot reach %s (is a frontend node running there? pick one with --to): %w", c.base, err)
	}
	// Only the read's error matters: once the answer is read (or given up on),
	// a failed close of the body changes nothing for the caller.
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("httpapi: reading the answer to %s %s: %w", method, path, err)
	}
	if resp.StatusCode != want && (want != http.StatusCreated || resp.StatusCode != http.StatusOK) {
		// (A 200 for a 201: POST /work answers a duplicate by unique key so.)
		return answerErr(resp, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: the answer to %s %s is not the expected JSON: %w", ErrServer, method, path, err)
	}
	return nil
}

func answerErr(resp *http.Response, data []byte) *APIError {
	return apiError(resp.StatusCode, resp.Header, data)
}

// apiError is the *APIError of an answer with status code and header h.
func apiError(code int, h http.Header, data []byte) *APIError {
	e := &APIError{StatusCode: code}
	var eb errorBody
	if json.Unmarshal(data, &eb) == nil && eb.Error != "" {
		e.Message = eb.Error
	} else {
		e.Message = strings.TrimSpace(string(data))
		if e.Message == "" {
			e.Message = http.StatusText(code)
		}
	}
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

// SetRate changes jobType's rate limit cluster-wide: PUT /rates/{type}.
// It returns the rate as the server recorded it.
func (c *Client) SetRate(ctx context.Context, jobType string, req RateRequest) (*RateInfo, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("httpapi: encoding the rate: %w", err)
	}
	var info RateInfo
	if err := c.do(ctx, http.MethodPut, PathRates+"/"+url.PathEscape(jobType), body, http.StatusOK, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// Rates lists the cluster's throttlers: GET /rates.
func (c *Client) Rates(ctx context.Context) ([]RateInfo, error) {
	var list RateList
	if err := c.do(ctx, http.MethodGet, PathRates, nil, http.StatusOK, &list); err != nil {
		return nil, err
	}
	return list.Rates, nil
}
