package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/foreman-actors/foreman/actors/throttler"
	throttlecore "github.com/foreman-actors/foreman/actors/throttler/core"
)

// Rates at run time (issue 36, item 3): PUT /rates/{type} changes a job
// type's rate limit cluster-wide, GET /rates lists the throttlers.
const (
	// PathRates lists the throttlers (GET); PathRates+"/{type}" sets one
	// job type's rate (PUT).
	PathRates = "/rates"
	// RateModeTimer is the seed's timer periods: at most N hand-outs in each
	// period of the throttler's timer.
	RateModeTimer = "timer"
	// RateModeStrict bounds every window of the period, wherever it starts
	// (the throttler's sliding window).
	RateModeStrict = "strict"
	// maxRateBody bounds the body of PUT /rates/{type}.
	maxRateBody = 4 << 10
)

// rateExample is the body the 400s of PUT /rates/{type} show.
const rateExample = `{"rate":"20/s","mode":"strict"}`

// RateAdmin is what the rate endpoints need of the cluster: a node that
// runs the throttlers (cmd/foreman adapts cluster/node's SetRate and
// Rates to it, so this package does not import cluster/node).
type RateAdmin interface {
	// SetRate sends the job type's new rate and mode to its throttler,
	// durably and cluster-wide. Errors wrap ErrInvalid (the throttler
	// refused the rate), ErrNotFound (no throttler for the job type) or
	// ErrUnavailable (not confirmed in time; sending it again is safe).
	SetRate(ctx context.Context, jobType string, r throttler.Rate, strict bool) error
	// Rates reports every throttler, in any order.
	Rates(ctx context.Context) ([]RateInfo, error)
}

// WithRateAdmin serves PUT /rates/{type} and GET /rates through a.
// Without it GET /rates lists none and PUT /rates/{type} answers 501.
func WithRateAdmin(a RateAdmin) Option { return func(c *config) { c.rates = a } }

// RateRequest is the body of PUT /rates/{type}.
type RateRequest struct {
	// Rate is COUNT/PERIOD: "20/s", "100/m", "1000/h" or a Go duration
	// as the period, "5/500ms".
	Rate string `json:"rate"`
	// Mode is RateModeTimer (the default when empty) or RateModeStrict.
	Mode string `json:"mode,omitempty"`
}

// RateInfo is one throttler in GET /rates, and the answer to PUT
// /rates/{type} (then only Type, Rate, Calls, Per and Mode are set).
type RateInfo struct {
	// Type is the limited job type.
	Type string `json:"type"`
	// Rate is the limit as PUT /rates/{type} takes it, e.g. "20/s".
	Rate string `json:"rate"`
	// Calls and Per are Rate's parts: Calls hand-outs per Per (a Go
	// duration, e.g. "1s").
	Calls int    `json:"calls"`
	Per   string `json:"per"`
	// Mode is RateModeTimer or RateModeStrict.
	Mode string `json:"mode"`
	// Node is the member hosting the throttler (its actor system address),
	// empty when it was not found.
	Node string `json:"node,omitempty"`
	// Queued is how many permit requests wait in the throttler's queue.
	Queued int `json:"queued"`
	// Granted and Refused count the permits the throttler granted and
	// refused since it started.
	Granted uint64 `json:"granted"`
	Refused uint64 `json:"refused"`
	// Error says why the throttler could not be asked (the other fields
	// but Type may then be empty).
	Error string `json:"error,omitempty"`
}

// RateList is the body of GET /rates.
type RateList struct {
	// Rates are the throttlers, by job type.
	Rates []RateInfo `json:"rates"`
}

// NewRateInfo fills the rate fields of a RateInfo from r.
func NewRateInfo(jobType string, r throttler.Rate, strict bool) RateInfo {
	mode := RateModeTimer
	if strict {
		mode = RateModeStrict
	}
	return RateInfo{Type: jobType, Rate: FormatRate(r), Calls: r.Calls, Per: r.Per.String(), Mode: mode}
}

// FormatRate writes r as ParseRate reads it: "20/s", "100/m", "5/500ms"
// (the throttler's core.FormatRate).
func FormatRate(r throttler.Rate) string { return throttlecore.FormatRate(r) }

// ParseRate reads COUNT/PERIOD, the period being s, m, h or a Go duration
// ("20/s", "100/m", "5/500ms"), with the throttler's one parser
// (core.ParseRate). Errors wrap ErrInvalid and say what is accepted.
func ParseRate(s string) (throttler.Rate, error) {
	r, err := throttlecore.ParseRate(s)
	if err != nil {
		return throttler.Rate{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return r, nil
}

// DecodeRate reads the body of PUT /rates/{type}: {"rate": ..., "mode":
// ...}, nothing else. Errors wrap ErrInvalid and name the field, with an
// example.
func DecodeRate(r io.Reader) (rate throttler.Rate, strict bool, err error) {
	var req RateRequest
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var typ *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return rate, false, fmt.Errorf("%w: empty body; send %s", ErrInvalid, rateExample)
		case errors.As(err, &typ) && typ.Field != "":
			return rate, false, fmt.Errorf("%w: field %q must be a string, e.g. %s", ErrInvalid, typ.Field, rateExample)
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			return rate, false, fmt.Errorf(`%w: %s; the fields are "rate" and "mode", e.g. %s`, ErrInvalid, strings.TrimPrefix(err.Error(), "json: "), rateExample)
		default:
			return rate, false, fmt.Errorf("%w: the body is not a JSON object like %s: %w", ErrInvalid, rateExample, err)
		}
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return rate, false, fmt.Errorf("%w: extra data after the JSON object; send exactly one, e.g. %s", ErrInvalid, rateExample)
	}
	if req.Rate == "" {
		return rate, false, fmt.Errorf(`%w: missing "rate": e.g. %s`, ErrInvalid, rateExample)
	}
	if rate, err = ParseRate(req.Rate); err != nil {
		return rate, false, fmt.Errorf(`%w (field "rate", e.g. %s)`, err, rateExample)
	}
	switch req.Mode {
	case "", RateModeTimer:
	case RateModeStrict:
		strict = true
	default:
		return rate, false, fmt.Errorf(`%w: field "mode" is %q: want %q or %q (default %q), e.g. %s`, ErrInvalid, req.Mode, RateModeTimer, RateModeStrict, RateModeTimer, rateExample)
	}
	return rate, strict, nil
}

// handleSetRate: PUT /rates/{type}.
func (s *Server) handleSetRate(w http.ResponseWriter, r *http.Request) {
	if s.cfg.rates == nil {
		s.fail(w, r, errNoRates)
		return
	}
	jobType := r.PathValue("type")
	if len(jobType) > MaxTypeLength || !printable(jobType) {
		s.fail(w, r, fmt.Errorf("%w: job type %.40q must be 1-%d bytes of printable text, e.g. PUT /rates/square", ErrInvalid, jobType, MaxTypeLength))
		return
	}
	rate, strict, err := DecodeRate(http.MaxBytesReader(w, r.Body, maxRateBody))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.submitTimeout)
	defer cancel()
	if err := s.cfg.rates.SetRate(ctx, jobType, rate, strict); err != nil {
		s.fail(w, r, err)
		return
	}
	info := NewRateInfo(jobType, rate, strict)
	s.log.Info("rate changed", "job_type", jobType, "rate", info.Rate, "mode", info.Mode)
	writeJSON(w, http.StatusOK, info)
}

// handleRates: GET /rates.
// A server without a RateAdmin has no throttlers: an empty list, so the
// dashboard's panel says so instead of logging a failed request.
func (s *Server) handleRates(w http.ResponseWriter, r *http.Request) {
	if s.cfg.rates == nil {
		writeJSON(w, http.StatusOK, RateList{Rates: []RateInfo{}})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.queryTimeout)
	defer cancel()
	rates, err := s.cfg.rates.Rates(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rates = slices.Clone(rates)
	slices.SortFunc(rates, func(a, b RateInfo) int { return strings.Compare(a.Type, b.Type) })
	if rates == nil {
		rates = []RateInfo{}
	}
	writeJSON(w, http.StatusOK, RateList{Rates: rates})
}

var errNoRates = fmt.Errorf("%w: this server has no throttlers to manage (start the node with --rate)", ErrNotImplemented)
