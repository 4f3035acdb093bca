package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/messages"
)

// Paths of the observability routes.
const (
	// PathResubmit, after PathWork+"/{id}", re-submits a dead work (POST).
	PathResubmit = "/resubmit"
	// PathMetrics serves the node's Prometheus metrics (GET), when the
	// server has them (WithMetrics).
	PathMetrics = "/metrics"
	// PathOpenAPI serves the API's OpenAPI document (GET).
	PathOpenAPI = "/openapi.json"
	// PathUI serves the dashboard (GET).
	PathUI = "/ui"
)

// WithMetrics serves m at GET /metrics and times submissions in it
// (foreman_submit_ack_seconds).
func WithMetrics(m *metrics.Metrics) Option { return func(c *config) { c.metrics = m } }

// Lister is what the dashboard needs of a Backend beyond [Backend]: lists
// of works by status and the re-submission of dead works. A Backend that
// does not implement it answers those routes with 501.
type Lister interface {
	// ListWork returns the works in status, newest first, at most limit.
	ListWork(ctx context.Context, status messages.WorkStatus, limit int) (*messages.WorkList, error)
	// Resubmit runs dead work id again. Errors wrap ErrNotFound (unknown
	// id), ErrConflict (not dead) or ErrUnavailable.
	Resubmit(ctx context.Context, id string) error
}

var _ Lister = (*ActorBackend)(nil)

// timeSubmit records a submission's time to its answer in the metrics. A
// submission that waits for its result (?wait=) is timed by submitWait up
// to its ack instead: its answer comes when the job has run.
func (s *Server) timeSubmit(h http.HandlerFunc) http.HandlerFunc {
	if s.cfg.metrics == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if wantsWait(r) {
			h(w, r)
			return
		}
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h(rec, r)
		s.observeSubmit(rec.code < 300, time.Since(start))
	}
}

// observeSubmit records one submission's time to its durable ack (or
// error): plain submissions, re-submissions and those that wait.
func (s *Server) observeSubmit(ok bool, d time.Duration) {
	if s.cfg.metrics != nil {
		s.cfg.metrics.ObserveSubmit(ok, d)
	}
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// WorkSummary is one work in the body of GET /work?status=.
type WorkSummary struct {
	ID        string `json:"id"`
	Type      string `json:"type,omitempty"`
	Status    string `json:"status"`
	Attempts  int32  `json:"attempts"`
	LastError string `json:"last_error,omitempty"`
	// Worker and StartedAt: a running work's worker and start time.
	Worker    string     `json:"worker,omitempty"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	// FinishedAt: when a done or dead work ended.
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// WorkList is the body of GET /work?status=.
type WorkList struct {
	Works []WorkSummary `json:"works"`
	// Total is how many works are in that status (Works may be fewer).
	Total int64 `json:"total"`
}

// HistoryEntry is one transition in WorkInfo.History.
type HistoryEntry struct {
	// Event is accepted, started, failed, timed_out, completed, dead or
	// requeued (a new master took the job back from its worker).
	Event   string    `json:"event"`
	At      time.Time `json:"at"`
	Worker  string    `json:"worker,omitempty"`
	Attempt int32     `json:"attempt,omitempty"`
	Error   string    `json:"error,omitempty"`
}

var historyNames = map[messages.WorkHistoryKind]string{
	messages.WorkHistoryKind_WORK_HISTORY_KIND_ACCEPTED:  "accepted",
	messages.WorkHistoryKind_WORK_HISTORY_KIND_STARTED:   "started",
	messages.WorkHistoryKind_WORK_HISTORY_KIND_FAILED:    "failed",
	messages.WorkHistoryKind_WORK_HISTORY_KIND_TIMED_OUT: "timed_out",
	messages.WorkHistoryKind_WORK_HISTORY_KIND_COMPLETED: "completed",
	messages.WorkHistoryKind_WORK_HISTORY_KIND_DEAD:      "dead",
	messages.WorkHistoryKind_WORK_HISTORY_KIND_REQUEUED:  "requeued",
	messages.WorkHistoryKind_WORK_HISTORY_KIND_CANCELLED: "cancelled",
}

func historyFromReply(in []*messages.WorkHistoryEvent) []HistoryEntry {
	if len(in) == 0 {
		return nil
	}
	out := make([]HistoryEntry, len(in))
	for i, h := range in {
		name, ok := historyNames[h.GetKind()]
		if !ok {
			name = "unknown"
		}
		out[i] = HistoryEntry{Event: name, At: time.Unix(0, h.GetAtUnixNano()).UTC(), Worker: h.GetWorkerId(), Attempt: h.GetAttempt(), Error: h.GetError()}
	}
	return out
}

// listStatuses maps the ?status= words to the master's statuses.
var listStatuses = map[string]messages.WorkStatus{
	"pending":       messages.WorkStatus_WORK_STATUS_ACCEPTED,
	StatusRunning:   messages.WorkStatus_WORK_STATUS_RUNNING,
	StatusDone:      messages.WorkStatus_WORK_STATUS_DONE,
	StatusDead:      messages.WorkStatus_WORK_STATUS_DEAD,
	StatusCancelled: messages.WorkStatus_WORK_STATUS_CANCELLED,
}

// handleList: GET /work?status=pending|running|done|dead|cancelled&limit=N.
func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	l, ok := s.backend.(Lister)
	if !ok {
		s.fail(w, r, fmt.Errorf("%w: this server's backend cannot list works", ErrNotImplemented))
		return
	}
	q := r.URL.Query()
	status, ok := listStatuses[q.Get("status")]
	if !ok {
		s.fail(w, r, fmt.Errorf("%w: status %q: want one of pending, running, done, dead, cancelled (GET /work?status=dead&limit=50)", ErrInvalid, q.Get("status")))
		return
	}
	limit := 0
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			s.fail(w, r, fmt.Errorf("%w: limit %q: want a number from 1 to 1000", ErrInvalid, v))
			return
		}
		limit = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.queryTimeout)
	defer cancel()
	list, err := l.ListWork(ctx, status, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := WorkList{Works: make([]WorkSummary, 0, len(list.GetWorks())), Total: list.GetTotal()}
	for _, ws := range list.GetWorks() {
		name, _ := statusName(ws.GetStatus())
		out.Works = append(out.Works, WorkSummary{
			ID: ws.GetWorkId(), Type: ws.GetJobType(), Status: name, Attempts: ws.GetAttempts(), LastError: ws.GetLastError(),
			Worker: ws.GetWorkerId(), StartedAt: unixTime(ws.GetStartedAtUnixNano()), FinishedAt: unixTime(ws.GetFinishedAtUnixNano()),
		})
	}
	writeJSON(w, http.StatusOK, out)
}

func unixTime(ns int64) *time.Time {
	if ns == 0 {
		return nil
	}
	t := time.Unix(0, ns).UTC()
	return &t
}

// handleResubmit: POST /work/{id}/resubmit.
func (s *Server) handleResubmit(w http.ResponseWriter, r *http.Request) {
	l, ok := s.backend.(Lister)
	if !ok {
		s.fail(w, r, fmt.Errorf("%w: this server's backend cannot re-submit works", ErrNotImplemented))
		return
	}
	id := r.PathValue("id")
	if err := validateID(id); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.submitTimeout)
	defer cancel()
	start := time.Now()
	err := l.Resubmit(ctx, id)
	s.observeSubmit(err == nil, time.Since(start))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("work re-submitted", "work_id", id)
	writeJSON(w, http.StatusAccepted, SubmitResponse{ID: id})
}

// ListWork lists works through the frontend client; see Lister.
func (b *ActorBackend) ListWork(ctx context.Context, status messages.WorkStatus, limit int) (*messages.WorkList, error) {
	l, err := b.client.ListWork(ctx, status, limit)
	if err != nil {
		return nil, b.queryErr(ctx, err)
	}
	return l, nil
}

// Resubmit re-submits through the frontend client; see Lister.
func (b *ActorBackend) Resubmit(ctx context.Context, id string) error {
	rep, err := b.client.Resubmit(ctx, id)
	if err != nil {
		if errors.Is(err, frontend.ErrInvalidWork) {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return b.queryErr(ctx, err)
	}
	switch {
	case rep.GetAccepted():
		return nil
	case rep.GetUnavailable():
		return fmt.Errorf("%w: %s", ErrUnavailable, rep.GetReason())
	case rep.GetStatus() == messages.WorkStatus_WORK_STATUS_UNKNOWN:
		return fmt.Errorf("%w: work %q: %s", ErrNotFound, id, rep.GetReason())
	default:
		return fmt.Errorf("%w: work %q: %s", ErrConflict, id, rep.GetReason())
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
