package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/actors/frontend"
	throttlecore "github.com/foreman-actors/foreman/actors/throttler/core"
	"github.com/foreman-actors/foreman/messages"
)

// Run-time limits of concurrency keys (issue 37 item 5,
// docs/scheduling-keys.md): PUT /limits/{key} sets a key's running limit
// and hand-out rate, journaled by the master of the key's shard, GET
// /limits lists the effective limits, DELETE /limits/{key} goes back to
// the flags'.
const (
	// PathLimits lists the limits (GET); PathLimits+"/{key}" sets (PUT)
	// or removes (DELETE) one key's.
	PathLimits = "/limits"
	// maxLimitBody bounds the body of PUT /limits/{key}.
	maxLimitBody = 4 << 10
	// limitExample is the body the 400s of PUT /limits/{key} show.
	limitExample = `{"concurrency":10,"rate":"10/s"}`
	// maxLimitKeyLength bounds the key in the path (the master's MaxKeyLen).
	maxLimitKeyLength = 256
	// maxConcurrencyLimit bounds "concurrency" (the master's).
	maxConcurrencyLimit = 1_000_000
)

// LimitRequest is the body of PUT /limits/{key}. An absent or zero part is
// no run-time value: the flags' (--concurrency-limit, --key-rate) applies.
type LimitRequest struct {
	// Concurrency is at most this many of the key's jobs running at once.
	Concurrency int `json:"concurrency,omitempty"`
	// Rate is at most COUNT hand-outs of the key's jobs in any window of
	// PERIOD: "10/s", "100/m" or "5/500ms".
	Rate string `json:"rate,omitempty"`
}

// KeyLimit is one key's effective limits in GET /limits and the answers
// of PUT and DELETE.
type KeyLimit struct {
	// Key is the concurrency key; "" is every key without limits of its
	// own (the flags' defaults).
	Key string `json:"key"`
	// Concurrency is the running limit in effect.
	Concurrency int64 `json:"concurrency"`
	// ConcurrencySource is "runtime" (PUT /limits), "flag" (the key's own
	// --concurrency-limit) or "default".
	ConcurrencySource string `json:"concurrency_source"`
	// Rate is the hand-out rate in effect ("": none).
	Rate string `json:"rate,omitempty"`
	// RateSource is "runtime", "flag" (the key's own --key-rate) or
	// "default" ("" without a rate).
	RateSource string `json:"rate_source,omitempty"`
}

// LimitsResponse is the body of GET /limits and of the PUT and DELETE
// answers (then the limits of the key's shard).
type LimitsResponse struct {
	Limits []KeyLimit `json:"limits"`
}

// LimitBackend is what the limit routes need of a Backend beyond
// [Backend]. A Backend that does not implement it answers them with 501.
type LimitBackend interface {
	// SetKeyLimit journals the key's run-time limits at the master of its
	// shard (both parts zero: removes them).
	SetKeyLimit(ctx context.Context, limit *messages.KeyLimitSet) ([]*messages.KeyLimitState, error)
	// KeyLimits returns the effective limits, merged over the shards.
	KeyLimits(ctx context.Context) ([]*messages.KeyLimitState, error)
}

var _ LimitBackend = (*ActorBackend)(nil)

// DecodeLimit reads the body of PUT /limits/{key} into a KeyLimitSet for
// key. Errors wrap ErrInvalid and name the field, with an example.
func DecodeLimit(key string, r io.Reader) (*messages.KeyLimitSet, error) {
	var req LimitRequest
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var typ *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("%w: empty body; send e.g. %s", ErrInvalid, limitExample)
		case errors.As(err, &typ) && typ.Field == "concurrency":
			return nil, fmt.Errorf(`%w: field "concurrency" must be a whole number, e.g. %s`, ErrInvalid, limitExample)
		case errors.As(err, &typ) && typ.Field != "":
			return nil, fmt.Errorf("%w: field %q must be a string, e.g. %s", ErrInvalid, typ.Field, limitExample)
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			return nil, fmt.Errorf(`%w: %s; the fields are "concurrency" and "rate", e.g. %s`, ErrInvalid, strings.TrimPrefix(err.Error(), "json: "), limitExample)
		default:
			return nil, fmt.Errorf("%w: the body is not a JSON object like %s: %w", ErrInvalid, limitExample, err)
		}
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: extra data after the JSON object; send exactly one, e.g. %s", ErrInvalid, limitExample)
	}
	if req.Concurrency < 0 || req.Concurrency > maxConcurrencyLimit {
		return nil, fmt.Errorf(`%w: field "concurrency" is %d: want 0 (the flags') to %d, e.g. %s`, ErrInvalid, req.Concurrency, maxConcurrencyLimit, limitExample)
	}
	l := &messages.KeyLimitSet{Key: key, Concurrency: int64(req.Concurrency)}
	if req.Rate != "" {
		r, err := throttlecore.ParseRate(req.Rate)
		if err != nil {
			return nil, fmt.Errorf(`%w: field "rate": %w (e.g. %s)`, ErrInvalid, err, limitExample)
		}
		l.RateCalls, l.RatePerNanos = int64(r.Calls), int64(r.Per)
	}
	return l, nil
}

// limitsBody converts the master's limits.
func limitsBody(ls []*messages.KeyLimitState) LimitsResponse {
	out := LimitsResponse{Limits: make([]KeyLimit, 0, len(ls))}
	for _, l := range ls {
		kl := KeyLimit{Key: l.GetKey(), Concurrency: l.GetConcurrency(), ConcurrencySource: l.GetConcurrencySource(), RateSource: l.GetRateSource()}
		if l.GetRateCalls() > 0 {
			kl.Rate = throttlecore.FormatRate(throttlecore.Rate{Calls: int(l.GetRateCalls()), Per: time.Duration(l.GetRatePerNanos())})
		}
		out.Limits = append(out.Limits, kl)
	}
	return out
}

// limitKey checks the key of a /limits/{key} path.
func limitKey(r *http.Request) (string, error) {
	key := r.PathValue("key")
	if key == "" || len(key) > maxLimitKeyLength || !printable(key) {
		return "", fmt.Errorf(`%w: the key in the path must be 1 to %d bytes of printable text, e.g. PUT /limits/tenant-a`, ErrInvalid, maxLimitKeyLength)
	}
	return key, nil
}

// handleLimits: GET /limits.
func (s *Server) handleLimits(w http.ResponseWriter, r *http.Request) {
	lb, ok := s.backend.(LimitBackend)
	if !ok {
		s.fail(w, r, fmt.Errorf("%w: this server's backend has no key limits", ErrNotImplemented))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.queryTimeout)
	defer cancel()
	ls, err := lb.KeyLimits(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, limitsBody(ls))
}

// handleSetLimit: PUT /limits/{key} (remove false) and DELETE
// /limits/{key} (remove true).
func (s *Server) handleSetLimit(remove bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		lb, ok := s.backend.(LimitBackend)
		if !ok {
			s.fail(w, r, fmt.Errorf("%w: this server's backend has no key limits", ErrNotImplemented))
			return
		}
		key, err := limitKey(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		l := &messages.KeyLimitSet{Key: key}
		if !remove {
			if l, err = DecodeLimit(key, http.MaxBytesReader(w, r.Body, maxLimitBody)); err != nil {
				s.fail(w, r, err)
				return
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.submitTimeout)
		defer cancel()
		ls, err := lb.SetKeyLimit(ctx, l)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.log.Info("key limits set", "key", key, "concurrency", l.GetConcurrency(), "rate_calls", l.GetRateCalls(),
			"rate_per", time.Duration(l.GetRatePerNanos()))
		writeJSON(w, http.StatusOK, limitsBody(ls))
	}
}

// SetKeyLimit goes through the frontend client; see LimitBackend. A limit
// the master refuses is a 400.
func (b *ActorBackend) SetKeyLimit(ctx context.Context, limit *messages.KeyLimitSet) ([]*messages.KeyLimitState, error) {
	ls, err := b.client.SetKeyLimit(ctx, limit)
	if errors.Is(err, frontend.ErrInvalidWork) {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err != nil {
		return nil, b.queryErr(ctx, err)
	}
	return ls, nil
}

// KeyLimits asks the frontend client for every shard's limits; see
// LimitBackend.
func (b *ActorBackend) KeyLimits(ctx context.Context) ([]*messages.KeyLimitState, error) {
	ls, err := b.client.KeyLimits(ctx)
	if err != nil {
		return nil, b.queryErr(ctx, err)
	}
	return ls, nil
}

// Limits returns the effective limits of the concurrency keys (GET
// /limits).
func (c *Client) Limits(ctx context.Context) (*LimitsResponse, error) {
	var out LimitsResponse
	if err := c.do(ctx, http.MethodGet, PathLimits, nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetLimit sets a concurrency key's run-time limits (PUT /limits/{key}):
// they win over the flags', durably; a zero part is the flags'. It returns
// the effective limits of the key's shard.
func (c *Client) SetLimit(ctx context.Context, key string, req LimitRequest) (*LimitsResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("httpapi: encoding the limit: %w", err)
	}
	var out LimitsResponse
	if err := c.do(ctx, http.MethodPut, PathLimits+"/"+url.PathEscape(key), body, http.StatusOK, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RemoveLimit removes a concurrency key's run-time limits (DELETE
// /limits/{key}): the flags' apply again.
func (c *Client) RemoveLimit(ctx context.Context, key string) (*LimitsResponse, error) {
	var out LimitsResponse
	if err := c.do(ctx, http.MethodDelete, PathLimits+"/"+url.PathEscape(key), nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
