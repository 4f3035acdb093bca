package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/foreman-actors/foreman/actors/schedule/cronexpr"
	"github.com/foreman-actors/foreman/messages"
)

// Paths of the periodic-job endpoints.
const (
	// PathSchedules is POST (add or replace) and GET (list) of schedules.
	PathSchedules = "/schedules"
)

// SchedulesAdmin is what the server needs for /schedules: the cluster's
// scheduler (node.ClusterNode and node.Local implement it). A reply with a
// code ("invalid", "not_found", "unavailable") is answered 400, 404 or
// 503; an error is a 503.
type SchedulesAdmin interface {
	Schedules(ctx context.Context, req *messages.ScheduleRequest) (*messages.ScheduleReply, error)
}

// WithSchedules serves /schedules through a (default: none, 501).
func WithSchedules(a SchedulesAdmin) Option { return func(c *config) { c.schedules = a } }

// Missed policies in the API.
const (
	MissedOnce    = "once"
	MissedSkip    = "skip"
	MissedCatchUp = "catch_up"
)

// ScheduleRequest is the body of POST /schedules.
type ScheduleRequest struct {
	// Name is unique; a POST with an existing name replaces that schedule
	// (its fired ticks stay fired).
	Name string `json:"name"`
	// Spec is the cron expression: 6 fields with seconds, 5 without,
	// @every D, @hourly and the like; "TZ=Europe/Berlin ..." sets the zone.
	Spec string `json:"spec"`
	// TimeZone is the IANA zone of Spec unless it has a TZ= prefix (default UTC).
	TimeZone string `json:"time_zone,omitempty"`
	// Type is the job type of each tick's job.
	Type string `json:"type"`
	// Payload is each tick's job input (JSON).
	Payload json.RawMessage `json:"payload,omitempty"`
	// Missed is what ticks missed while the cluster was down become: once
	// (default), skip or catch_up.
	Missed string `json:"missed,omitempty"`
	// CatchUpMax bounds catch_up (default 10, at most 1000).
	CatchUpMax int32 `json:"catch_up_max,omitempty"`
	// Paused adds the schedule paused.
	Paused bool `json:"paused,omitempty"`
}

// ScheduleInfo is a schedule as GET /schedules shows it.
type ScheduleInfo struct {
	ScheduleRequest
	// NextTick is when the next tick is due (absent when paused).
	NextTick *time.Time `json:"next_tick,omitempty"`
	// LastTick is the last tick whose job the master acknowledged.
	LastTick *time.Time `json:"last_tick,omitempty"`
	// Fired and Skipped count the ticks run and the missed ticks not run.
	Fired   int64 `json:"fired"`
	Skipped int64 `json:"skipped"`
	// LastWorkID is the work id of the last tick's job ("sched:<name>:<unix>").
	LastWorkID string `json:"last_work_id,omitempty"`
}

// ScheduleList is the answer of GET /schedules.
type ScheduleList struct {
	Schedules []ScheduleInfo `json:"schedules"`
	// Served is false on a server without a scheduler (the list is then
	// empty and writes answer 501), so the dashboard hides its panel.
	Served bool `json:"served"`
}

var missedPolicies = map[string]messages.MissedPolicy{
	"":            messages.MissedPolicy_MISSED_POLICY_UNSPECIFIED,
	MissedOnce:    messages.MissedPolicy_MISSED_POLICY_ONCE,
	MissedSkip:    messages.MissedPolicy_MISSED_POLICY_SKIP,
	MissedCatchUp: messages.MissedPolicy_MISSED_POLICY_CATCH_UP,
}

// Proto returns the request as the scheduler's message, or an error
// wrapping ErrInvalid that names the field and gives an example.
func (r ScheduleRequest) Proto() (*messages.Schedule, error) {
	switch {
	case r.Name == "":
		return nil, fmt.Errorf(`%w: name is required (e.g. "name": "nightly-report")`, ErrInvalid)
	case r.Spec == "":
		return nil, fmt.Errorf(`%w: spec is required (e.g. "spec": "0 30 2 * * *" or "@every 10s")`, ErrInvalid)
	case r.Type == "":
		return nil, fmt.Errorf(`%w: type is required (e.g. "type": "square")`, ErrInvalid)
	}
	missed, ok := missedPolicies[r.Missed]
	if !ok {
		return nil, fmt.Errorf(`%w: missed %q is not a policy: use "once" (default), "skip" or "catch_up" (e.g. "missed": "catch_up", "catch_up_max": 10)`, ErrInvalid, r.Missed)
	}
	var loc *time.Location
	if r.TimeZone != "" {
		l, err := time.LoadLocation(r.TimeZone)
		if err != nil {
			return nil, fmt.Errorf(`%w: time_zone %q is not an IANA time zone (e.g. "time_zone": "Europe/Berlin")`, ErrInvalid, r.TimeZone)
		}
		loc = l
	}
	if _, err := cronexpr.Parse(r.Spec, loc); err != nil {
		return nil, fmt.Errorf("%w: spec: %w", ErrInvalid, err)
	}
	var payload []byte
	if len(r.Payload) > 0 && !bytes.Equal(r.Payload, []byte("null")) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, r.Payload); err != nil {
			return nil, fmt.Errorf("%w: payload is not JSON: %w", ErrInvalid, err)
		}
		payload = buf.Bytes()
	}
	return &messages.Schedule{Name: r.Name, Spec: r.Spec, TimeZone: r.TimeZone, JobType: r.Type, Payload: payload,
		Missed: missed, CatchUpMax: r.CatchUpMax, Paused: r.Paused}, nil
}

// ScheduleInfoFrom converts the scheduler's view of a schedule.
func ScheduleInfoFrom(in *messages.ScheduleInfo) ScheduleInfo {
	s := in.GetSchedule()
	info := ScheduleInfo{
		ScheduleRequest: ScheduleRequest{Name: s.GetName(), Spec: s.GetSpec(), TimeZone: s.GetTimeZone(), Type: s.GetJobType(),
			CatchUpMax: s.GetCatchUpMax(), Paused: s.GetPaused()},
		Fired: s.GetFired(), Skipped: s.GetSkipped(),
	}
	if p := s.GetPayload(); len(p) > 0 {
		if json.Valid(p) {
			info.Payload = json.RawMessage(p)
		} else {
			q, _ := json.Marshal(string(p))
			info.Payload = q
		}
	}
	for name, p := range missedPolicies {
		if name != "" && p == s.GetMissed() {
			info.Missed = name
		}
	}
	if n := in.GetNextTickUnix(); n != 0 {
		t := time.Unix(n, 0).UTC()
		info.NextTick = &t
	}
	if l := s.GetLastTickUnix(); l != 0 {
		t := time.Unix(l, 0).UTC()
		info.LastTick = &t
		info.LastWorkID = fmt.Sprintf("sched:%s:%d", s.GetName(), l)
	}
	return info
}

func (s *Server) scheduleRoutes() []Route {
	one := PathSchedules + "/{name}"
	return []Route{
		{Method: http.MethodPost, Path: PathSchedules, handler: s.handleScheduleAdd},
		{Method: http.MethodGet, Path: PathSchedules, handler: s.handleScheduleList},
		{Method: http.MethodGet, Path: one, handler: s.handleScheduleOp("get")},
		{Method: http.MethodDelete, Path: one, handler: s.handleScheduleOp("remove")},
		{Method: http.MethodPost, Path: one + "/pause", handler: s.handleScheduleOp("pause")},
		{Method: http.MethodPost, Path: one + "/resume", handler: s.handleScheduleOp("resume")},
		{Path: PathSchedules, handler: methodNotAllowed("GET, HEAD, POST")},
		{Path: one, handler: methodNotAllowed("GET, HEAD, DELETE")},
		{Path: one + "/pause", handler: methodNotAllowed(http.MethodPost)},
		{Path: one + "/resume", handler: methodNotAllowed(http.MethodPost)},
	}
}

// askSchedules sends req to the scheduler and maps its reply's code.
func (s *Server) askSchedules(r *http.Request, req *messages.ScheduleRequest) ([]ScheduleInfo, error) {
	if s.cfg.schedules == nil {
		return nil, fmt.Errorf("%w: this node serves no schedules (run the HTTP API on a frontend or all-in-one node)", ErrNotImplemented)
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.queryTimeout)
	defer cancel()
	rep, err := s.cfg.schedules.Schedules(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	switch rep.GetCode() {
	case "":
	case "invalid":
		return nil, fmt.Errorf("%w: %s", ErrInvalid, rep.GetError())
	case "not_found":
		return nil, fmt.Errorf("%w: %s", ErrNotFound, rep.GetError())
	default:
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, rep.GetError())
	}
	out := make([]ScheduleInfo, 0, len(rep.GetSchedules()))
	for _, in := range rep.GetSchedules() {
		out = append(out, ScheduleInfoFrom(in))
	}
	return out, nil
}

// handleScheduleAdd: POST /schedules.
func (s *Server) handleScheduleAdd(w http.ResponseWriter, r *http.Request) {
	var req ScheduleRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.cfg.maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.fail(w, r, fmt.Errorf("%w: the body is over %d bytes", ErrTooLarge, s.cfg.maxBody))
			return
		}
		s.fail(w, r, fmt.Errorf(`%w: the body must be one JSON object such as {"name": "beat", "spec": "@every 10s", "type": "square", "payload": 3}: %w`, ErrInvalid, err))
		return
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		s.fail(w, r, fmt.Errorf("%w: the body has more than one JSON value", ErrInvalid))
		return
	}
	sched, err := req.Proto()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	infos, err := s.askSchedules(r, &messages.ScheduleRequest{Op: "add", Schedule: sched})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(infos) != 1 {
		s.fail(w, r, fmt.Errorf("%w: the scheduler answered with %d schedules", ErrServer, len(infos)))
		return
	}
	w.Header().Set("Location", PathSchedules+"/"+url.PathEscape(req.Name))
	writeJSON(w, http.StatusCreated, infos[0])
}

// handleScheduleList: GET /schedules.
func (s *Server) handleScheduleList(w http.ResponseWriter, r *http.Request) {
	if s.cfg.schedules == nil {
		writeJSON(w, http.StatusOK, ScheduleList{Schedules: []ScheduleInfo{}})
		return
	}
	infos, err := s.askSchedules(r, &messages.ScheduleRequest{Op: "list"})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ScheduleList{Schedules: infos, Served: true})
}

// handleScheduleOp: GET, DELETE /schedules/{name}, POST .../pause and
// .../resume.
func (s *Server) handleScheduleOp(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		req := &messages.ScheduleRequest{Op: op, Name: name}
		if op == "get" {
			req.Op = "list"
		}
		infos, err := s.askSchedules(r, req)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		switch op {
		case "remove":
			writeJSON(w, http.StatusOK, map[string]string{"removed": name})
			return
		case "get":
			for _, in := range infos {
				if in.Name == name {
					writeJSON(w, http.StatusOK, in)
					return
				}
			}
			s.fail(w, r, fmt.Errorf("%w: no schedule named %q; list them with GET /schedules", ErrNotFound, name))
			return
		}
		if len(infos) != 1 {
			s.fail(w, r, fmt.Errorf("%w: the scheduler answered with %d schedules", ErrServer, len(infos)))
			return
		}
		writeJSON(w, http.StatusOK, infos[0])
	}
}

// AddSchedule adds or replaces a schedule (POST /schedules).
func (c *Client) AddSchedule(ctx context.Context, req ScheduleRequest) (*ScheduleInfo, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var info ScheduleInfo
	if err := c.do(ctx, http.MethodPost, PathSchedules, body, http.StatusCreated, &info); err != nil {
		return nil, err
	}
	return &info, nil
}

// Schedules lists the schedules (GET /schedules).
func (c *Client) Schedules(ctx context.Context) ([]ScheduleInfo, error) {
	var list ScheduleList
	if err := c.do(ctx, http.MethodGet, PathSchedules, nil, http.StatusOK, &list); err != nil {
		return nil, err
	}
	return list.Schedules, nil
}

// RemoveSchedule removes a schedule (DELETE /schedules/{name}).
func (c *Client) RemoveSchedule(ctx context.Context, name string) error {
	var v map[string]string
	return c.do(ctx, http.MethodDelete, PathSchedules+"/"+url.PathEscape(name), nil, http.StatusOK, &v)
}

// PauseSchedule pauses (pause true) or resumes a schedule (POST
// /schedules/{name}/pause or /resume). Ticks while paused are not run,
// nor caught up on resume.
func (c *Client) PauseSchedule(ctx context.Context, name string, pause bool) (*ScheduleInfo, error) {
	op := "/resume"
	if pause {
		op = "/pause"
	}
	var info ScheduleInfo
	if err := c.do(ctx, http.MethodPost, PathSchedules+"/"+url.PathEscape(name)+op, nil, http.StatusOK, &info); err != nil {
		return nil, err
	}
	return &info, nil
}
