package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/messages"
)

// POST /work?wait=D: submit and wait for the outcome, with the caller's
// interest. The request's context is the caller: a client that disconnects
// before the job starts means it is never started; while it runs, its ctx is
// cancelled; either way the work ends StatusCancelled. The answer is 200
// with the outcome (WorkInfo) when the work finishes within D, 202 with the
// id when D ends first: the job goes on without a waiter (GET /work/{id}
// or the result feed have its result).

// Limits of POST /work?wait=.
const (
	// DefaultWait is the wait of POST /work?wait with no value.
	DefaultWait = 30 * time.Second
	// MaxWait caps the wait of one POST /work?wait=D (and GET
	// /results?wait=D); a longer wait answers 400.
	MaxWait = 5 * time.Minute
)

// CallBackend is a Backend that can submit work with its caller's interest
// (POST /work?wait=). [ActorBackend] implements it.
type CallBackend interface {
	// StartCall submits w with a waiter that lives as long as interest
	// (the HTTP request's context), retrying until submit ends; errors as
	// Backend.Submit.
	StartCall(interest, submit context.Context, w *messages.Work) (*frontend.Call, error)
}

// parseWait reads a wait parameter: a Go duration ("30s", "1m") or seconds
// ("30"); empty is def.
func parseWait(name, v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, err2 := strconv.ParseFloat(v, 64)
		if err2 != nil {
			return 0, fmt.Errorf("%w: %s=%.20q is not a duration; give e.g. %s=30s or %s=30 (seconds)", ErrInvalid, name, v, name, name)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 || d > MaxWait {
		return 0, fmt.Errorf("%w: %s=%s is out of range 0..%v; wait in steps (a 202 gives the id to poll or read from the result feed)", ErrInvalid, name, v, MaxWait)
	}
	return d, nil
}

// holdFor extends the write deadline of a request held for up to d: the
// server's write timeout is meant for ordinary answers.
func holdFor(w http.ResponseWriter, d time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + 2*writeSlack))
}

// submitWait answers POST /work?wait=D; submit bounds the submission.
func (s *Server) submitWait(submit context.Context, w http.ResponseWriter, r *http.Request, work *messages.Work) {
	wait, err := parseWait("wait", r.URL.Query().Get("wait"), DefaultWait)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cb, ok := s.backend.(CallBackend)
	if !ok {
		s.fail(w, r, fmt.Errorf("%w: this server cannot wait for results (its backend has no caller interest); submit without ?wait and poll GET /work/{id}", ErrInvalid))
		return
	}
	holdFor(w, wait)
	start := time.Now()
	call, err := cb.StartCall(r.Context(), submit, work)
	s.observeSubmit(err == nil, time.Since(start)) // StartCall returns once the work is durable
	if err != nil {
		if r.Context().Err() != nil {
			s.leftOrRevoked(w, r)
			return
		}
		s.fail(w, r, err)
		return
	}
	defer call.Close()
	id := work.GetWorkId()
	wctx, cancel := context.WithTimeout(r.Context(), max(wait-time.Since(start), 0))
	defer cancel()
	res, err := call.Wait(wctx)
	switch {
	case revoked(r):
		// Checked first: the revocation cancels the job, and its CANCELLED
		// outcome can reach Wait before the ended context does (a loaded
		// machine); the answer is still the revocation's 401.
		s.log.Debug("token revoked before the work finished; cancelling it", "work_id", id)
		s.leftOrRevoked(w, r)
	case res != nil:
		s.log.Debug("work finished while its caller waited", "work_id", id, "status", res.GetStatus())
		writeJSON(w, http.StatusOK, outcomeInfo(res))
	case r.Context().Err() != nil:
		// The client left (or its token was revoked: 401): the call's
		// interest tells the workers (the job is not started, or
		// cancelled).
		s.log.Debug("caller left before the work finished; cancelling it", "work_id", id)
		s.leftOrRevoked(w, r)
	case errors.Is(err, context.DeadlineExceeded):
		s.waitEnded(w, r, call)
	default:
		s.fail(w, r, fmt.Errorf("%w: waiting for work %q: %w", ErrServer, id, err))
	}
}

// waitEnded answers a wait that ended before the outcome: one last look at
// the status (it may have just finished), else the job goes on without its
// waiter and the answer is 202.
func (s *Server) waitEnded(w http.ResponseWriter, r *http.Request, call *frontend.Call) {
	id := call.Work().GetWorkId()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.queryTimeout)
	defer cancel()
	status := StatusAccepted
	if st, err := s.backend.WorkStatus(ctx, id); err == nil {
		if info, ok := WorkInfoFromReply(st); ok {
			if info.Status == StatusDone || info.Status == StatusDead || info.Status == StatusCancelled {
				info.ID = id
				writeJSON(w, http.StatusOK, info)
				return
			}
			status = info.Status
		}
	}
	if err := call.Detach(ctx); err != nil {
		// The waiter keeps saying yes for a while (Release) and the job
		// runs; a worker that asks much later finds it gone. Say so.
		s.log.Warn("could not detach the waiter of a work whose caller stopped waiting", "work_id", id, "error", err)
	}
	w.Header().Set("Location", PathWork+"/"+url.PathEscape(id))
	writeJSON(w, http.StatusAccepted, WaitPending{ID: id, Status: status})
}

// WaitPending is the body of a 202 answer to POST /work?wait=D: the work is
// durable and goes on; read its outcome with GET /work/{id} or from the
// result feed.
type WaitPending struct {
	// ID is the work id.
	ID string `json:"id"`
	// Status is the work's status when the wait ended.
	Status string `json:"status"`
}

// outcomeInfo is the WorkInfo of an outcome the master sent the waiter
// (Attempts is not part of it: 0).
func outcomeInfo(r *messages.WorkResult) WorkInfo {
	name, ok := statusName(r.GetStatus())
	if !ok {
		name = strings.ToLower(strings.TrimPrefix(r.GetStatus().String(), "WORK_STATUS_"))
	}
	return WorkInfo{ID: r.GetWorkId(), Status: name, Type: r.GetJobType(), Result: resultJSON(r.GetResult()), LastError: r.GetError()}
}

// StartCall implements CallBackend.
func (b *ActorBackend) StartCall(interest, submit context.Context, w *messages.Work) (*frontend.Call, error) {
	call := b.client.NewCall(interest, w)
	if err := call.Start(submit); err != nil {
		call.Close()
		return nil, b.submitErr(submit, w, err)
	}
	return call, nil
}
