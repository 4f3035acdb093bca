package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/foreman-actors/foreman/messages"
)

// Progress in the result stream (issue 38, docs/long-jobs.md): GET
// /results/stream?progress=true also sends an `event: progress` whenever a
// running job's latest worker.Progress changed. Progress is not journaled
// (a heartbeat is a liveness hint), so these events carry no id: a client
// that reconnects resumes the results from its Last-Event-ID and gets the
// running jobs' current progress again. Off by default: each stream that
// asks for it lists the running works once per progressEvery.

// Bounds of the stream's progress events.
const (
	// progressEvery is how often a stream with progress=true looks for new
	// progress: about a worker's heartbeat interval.
	progressEvery = time.Second
	// progressListLimit is the most running works one look reads (the
	// newest started first); a job beyond it shows its progress on GET
	// /work/{id}.
	progressListLimit = 1000
)

// ProgressEvent is the data of one `event: progress` of GET
// /results/stream?progress=true: a running job's latest progress.
type ProgressEvent struct {
	// ID is the work id.
	ID string `json:"id"`
	// Type is the job type.
	Type string `json:"type,omitempty"`
	// Progress is the job's latest worker.Progress.
	Progress ProgressInfo `json:"progress"`
	// Heartbeat is when its worker last reported it alive.
	Heartbeat *time.Time `json:"heartbeat,omitempty"`
}

// parseProgress reads the stream's progress parameter.
func parseProgress(v string) (bool, error) {
	if v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%w: progress=%.20q is not a boolean; give progress=true to receive running jobs' progress events", ErrInvalid, v)
	}
	return on, nil
}

// progressFeed remembers what a stream last sent of each running job, so
// that it sends only changes.
type progressFeed struct {
	lister Lister
	sent   map[string]ProgressInfo
	next   time.Time // when to look again
}

// newProgressFeed returns nil when the backend cannot list works: the
// stream then sends results only.
func newProgressFeed(b Backend) *progressFeed {
	l, ok := b.(Lister)
	if !ok {
		return nil
	}
	return &progressFeed{lister: l, sent: make(map[string]ProgressInfo)}
}

// wait is how long the stream may hold its next feed read.
func (p *progressFeed) wait(now time.Time, limit time.Duration) time.Duration {
	if p == nil {
		return limit
	}
	return min(limit, max(p.next.Sub(now), 10*time.Millisecond))
}

// write sends the progress that changed since the last look, if a look is
// due; false when the client left. A failed list is skipped: the next look
// tries again, and results keep flowing.
func (p *progressFeed) write(ctx context.Context, w io.Writer, now time.Time) bool {
	if p == nil || now.Before(p.next) {
		return true
	}
	p.next = now.Add(progressEvery)
	l, err := p.lister.ListWork(ctx, messages.WorkStatus_WORK_STATUS_RUNNING, progressListLimit)
	if err != nil {
		return true
	}
	seen := make(map[string]bool, len(l.GetWorks()))
	var buf []byte
	for _, s := range l.GetWorks() {
		if !s.GetHasProgress() {
			continue
		}
		id := s.GetWorkId()
		seen[id] = true
		pi := ProgressInfo{Fraction: s.GetProgress(), Message: s.GetProgressMessage()}
		if last, ok := p.sent[id]; ok && last == pi {
			continue
		}
		p.sent[id] = pi
		ev := ProgressEvent{ID: id, Type: s.GetJobType(), Progress: pi}
		if hb := s.GetHeartbeatUnixNano(); hb != 0 {
			at := time.Unix(0, hb).UTC()
			ev.Heartbeat = &at
		}
		b, _ := json.Marshal(ev) // our own type: cannot fail
		buf = append(buf, "event: progress\ndata: "...)
		buf = append(append(buf, b...), "\n\n"...)
	}
	for id := range p.sent {
		if !seen[id] {
			delete(p.sent, id) // finished (its result comes in the feed) or no longer listed
		}
	}
	if len(buf) == 0 {
		return true
	}
	_, err = w.Write(buf)
	return err == nil
}
