package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/foreman-actors/foreman/messages"
)

// The queue controls and submission fields of issue 37 (docs/scheduling.md):
// delayed jobs (run_at, delay), priorities, fairness keys, paused job types.

// PathQueues is GET /queues (the state of each job type's queue);
// POST /queues/{type}/pause and /queues/{type}/resume pause and resume one.
const (
	PathQueues      = "/queues"
	PathQueuePause  = "/pause"
	PathQueueResume = "/resume"
)

// Bounds of the queueing fields of a submission.
const (
	MinPriority = 0
	MaxPriority = 9
	// MaxFairnessKeyLength bounds fairness_key in bytes.
	MaxFairnessKeyLength = 256
)

// JobTypeQueue is one job type's queue in GET /queues and the answers of
// pause and resume.
type JobTypeQueue struct {
	// Type is the job type.
	Type string `json:"type"`
	// Paused: the type accepts and keeps jobs but hands none out.
	Paused bool `json:"paused"`
	// Pending jobs wait for a worker (delayed ones included).
	Pending int64 `json:"pending"`
	// Delayed jobs (of Pending) wait for their run_at or a retry backoff.
	Delayed int64 `json:"delayed"`
	// Running jobs are handed out and not yet reported.
	Running int64 `json:"running"`
}

// QueuesResponse is the body of GET /queues and of the pause and resume
// answers: every job type with jobs or paused, sorted by type.
type QueuesResponse struct {
	Queues []JobTypeQueue `json:"queues"`
}

// QueueBackend is what the queue routes need of a Backend beyond
// [Backend]. A Backend that does not implement it answers them with 501.
type QueueBackend interface {
	// Queues returns every job type's queue, merged over the shards.
	Queues(ctx context.Context) ([]*messages.QueueState, error)
	// PauseQueue pauses (or resumes) a job type on every shard, durably.
	PauseQueue(ctx context.Context, jobType string, paused bool) ([]*messages.QueueState, error)
}

var _ QueueBackend = (*ActorBackend)(nil)

// checkQueueFields checks the queueing fields of a decoded submission:
// each error names the field and shows an example.
func checkQueueFields(req *SubmitRequest) error {
	if req.RunAt != "" {
		if req.Delay != "" {
			return fmt.Errorf(`%w: "run_at" and "delay" both set; send one, e.g. {"type":"square","delay":"90s"}`, ErrInvalid)
		}
		if _, err := time.Parse(time.RFC3339Nano, req.RunAt); err != nil {
			return fmt.Errorf(`%w: "run_at" %q is not an RFC 3339 time; send e.g. "2026-11-28T10:00:00Z" or "2026-11-28T11:00:00+01:00"`, ErrInvalid, req.RunAt)
		}
	}
	if req.Delay != "" {
		d, err := time.ParseDuration(req.Delay)
		if err != nil || d < 0 {
			return fmt.Errorf(`%w: "delay" %q is not a non-negative Go duration; send e.g. "90s", "15m" or "1h30m"`, ErrInvalid, req.Delay)
		}
	}
	if p := req.Priority; p != nil && (*p < MinPriority || *p > MaxPriority) {
		return fmt.Errorf(`%w: "priority" %d is out of range; send 0 (lowest) to 9 (highest), e.g. "priority":7 (absent: 5)`, ErrInvalid, *p)
	}
	if k := req.FairnessKey; k != "" && (len(k) > MaxFairnessKeyLength || !printable(k)) {
		return fmt.Errorf(`%w: "fairness_key" must be at most %d bytes of printable text, e.g. "fairness_key":"customer-42"`, ErrInvalid, MaxFairnessKeyLength)
	}
	return nil
}

// work returns the Work of a checked submission (a delay counts from now;
// the key fields are withKeys').
func (req *SubmitRequest) work() *messages.Work {
	w := &messages.Work{WorkId: req.ID, JobType: req.Type, Payload: req.Payload}
	if req.HeartbeatTimeout != "" {
		d, _ := time.ParseDuration(req.HeartbeatTimeout) // checked by checkHeartbeatTimeout
		w.HeartbeatTimeoutMs = d.Milliseconds()
	}
	if req.RunAt == "" && req.Delay == "" && req.Priority == nil && req.FairnessKey == "" {
		return w
	}
	switch {
	case req.RunAt != "":
		if t, err := time.Parse(time.RFC3339Nano, req.RunAt); err == nil {
			w.RunAtUnixNano = t.UnixNano()
		}
	case req.Delay != "":
		if d, err := time.ParseDuration(req.Delay); err == nil && d > 0 {
			w.RunAtUnixNano = time.Now().Add(d).UnixNano()
		}
	}
	if req.Priority != nil {
		p := int32(min(max(*req.Priority, MinPriority), MaxPriority))
		w.Priority = &p
	}
	w.FairnessKey = req.FairnessKey
	return w
}

func queueInfos(qs []*messages.QueueState) QueuesResponse {
	out := QueuesResponse{Queues: make([]JobTypeQueue, 0, len(qs))}
	for _, q := range qs {
		out.Queues = append(out.Queues, JobTypeQueue{Type: q.GetJobType(), Paused: q.GetPaused(), Pending: q.GetPending(),
			Delayed: q.GetDelayed(), Running: q.GetRunning()})
	}
	return out
}

// handleQueues: GET /queues.
func (s *Server) handleQueues(w http.ResponseWriter, r *http.Request) {
	qb, ok := s.backend.(QueueBackend)
	if !ok {
		s.fail(w, r, fmt.Errorf("%w: this server's backend has no queue controls", ErrNotImplemented))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.queryTimeout)
	defer cancel()
	qs, err := qb.Queues(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, queueInfos(qs))
}

// handlePause returns the handler of POST /queues/{type}/pause (paused)
// or /resume.
func (s *Server) handlePause(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		qb, ok := s.backend.(QueueBackend)
		if !ok {
			s.fail(w, r, fmt.Errorf("%w: this server's backend has no queue controls", ErrNotImplemented))
			return
		}
		jt := r.PathValue("type")
		if jt == "" || len(jt) > MaxTypeLength || !printable(jt) {
			s.fail(w, r, fmt.Errorf(`%w: the job type in the path must be 1 to %d bytes of printable text, e.g. POST /queues/square/pause`, ErrInvalid, MaxTypeLength))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.submitTimeout)
		defer cancel()
		qs, err := qb.PauseQueue(ctx, jt, paused)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		verb := "job type resumed"
		if paused {
			verb = "job type paused"
		}
		s.log.Info(verb, "job_type", jt)
		writeJSON(w, http.StatusOK, queueInfos(qs))
	}
}

// Queues asks the frontend client for every shard's queues; see QueueBackend.
func (b *ActorBackend) Queues(ctx context.Context) ([]*messages.QueueState, error) {
	qs, err := b.client.Queues(ctx)
	if err != nil {
		return nil, b.queryErr(ctx, err)
	}
	return qs, nil
}

// PauseQueue pauses or resumes through the frontend client; see QueueBackend.
func (b *ActorBackend) PauseQueue(ctx context.Context, jobType string, paused bool) ([]*messages.QueueState, error) {
	qs, err := b.client.PauseQueue(ctx, jobType, paused)
	if err != nil {
		return nil, b.queryErr(ctx, err)
	}
	return qs, nil
}

// Queues returns the state of every job type's queue (GET /queues).
func (c *Client) Queues(ctx context.Context) (*QueuesResponse, error) {
	var out QueuesResponse
	if err := c.do(ctx, http.MethodGet, PathQueues, nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PauseQueue pauses a job type: it keeps accepting jobs and hands none
// out until ResumeQueue; the state survives failover.
func (c *Client) PauseQueue(ctx context.Context, jobType string) (*QueuesResponse, error) {
	return c.pause(ctx, jobType, PathQueuePause)
}

// ResumeQueue resumes a paused job type.
func (c *Client) ResumeQueue(ctx context.Context, jobType string) (*QueuesResponse, error) {
	return c.pause(ctx, jobType, PathQueueResume)
}

func (c *Client) pause(ctx context.Context, jobType, verb string) (*QueuesResponse, error) {
	var out QueuesResponse
	if err := c.do(ctx, http.MethodPost, PathQueues+"/"+url.PathEscape(jobType)+verb, nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
