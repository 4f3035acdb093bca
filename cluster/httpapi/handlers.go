package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: fmt.Sprintf("method %s not allowed on %s; use %s", r.Method, r.URL.Path, allow)})
	}
}

// handleSubmit: POST /work.
func (s *Server) handleSubmit(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > s.cfg.maxBody {
		s.refuseBody(w, r, r.Body, false, fmt.Errorf("%w: the body is %d bytes, over the limit of %d; send a reference to large data instead", ErrTooLarge, r.ContentLength, s.cfg.maxBody))
		return
	}
	body := r.Body
	r.Body = http.MaxBytesReader(w, body, s.cfg.maxBody)
	req, err := decodeSubmitBody(r)
	if err != nil { // 400 or 413, maybe long before the body's end
		s.refuseBody(w, r, body, true, err)
		return
	}
	if req.ID == "" {
		req.ID = s.cfg.newID()
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.submitTimeout)
	defer cancel()
	work := withKeys(req.work(), req)
	if req.UniqueKey != "" || req.ConcurrencyKey != "" { // keys.go
		s.keyedID(work)
		req.ID = work.GetWorkId()
	}
	if wantsWait(r) { // POST /work?wait=D: wait.go
		s.submitWait(ctx, w, r, work)
		return
	}
	if err := s.backend.Submit(ctx, work); err != nil {
		if dup := duplicateOf(err); dup != nil {
			writeDuplicate(w, dup)
			return
		}
		s.fail(w, r, err)
		return
	}
	if s.log.Enabled(ctx, slog.LevelDebug) { // the arguments alone cost two allocations a job
		s.log.Debug("work accepted", "work_id", req.ID, "job_type", req.Type)
	}
	w.Header().Set("Location", PathWork+"/"+url.PathEscape(req.ID))
	writeJSON(w, http.StatusCreated, SubmitResponse{ID: req.ID})
}

// maxDiscardBytes bounds how much of an oversized body refuseBody reads
// and throws away so that its client gets the 413: a few seconds of a fast
// upload. A larger body still ends in a reset connection.
const maxDiscardBytes = 64 << 20

// refuseBody answers err (a body over a limit, 413, or one found invalid
// before its end, 400) to a client that may still be sending that body,
// and then reads and discards the rest of it (up to maxDiscardBytes,
// within the server's read timeout). Go's server, left to itself, answers
// and closes the connection when more than 256 KiB of the body are unread:
// a client that writes its whole body before it reads (Python's urllib,
// many simple clients) then gets a reset on its write and never sees the
// answer, while one that reads as it writes (curl) does. body is the
// request's body before any http.MaxBytesReader; started says whether the
// handler read some of it. A client that sent "Expect: 100-continue" and
// was not yet told to go on (nothing read) has sent no body: it gets the
// answer at once, and Go closes the connection without reading.
func (s *Server) refuseBody(w http.ResponseWriter, r *http.Request, body io.Reader, started bool, err error) {
	drain := started || !strings.EqualFold(r.Header.Get("Expect"), "100-continue")
	rc := http.NewResponseController(w)
	if drain {
		// Read after the answer is written, not before: a client that
		// reads as it writes sees the 413 at once and can stop sending.
		// (HTTP/2 always can; its writer has no EnableFullDuplex.)
		_ = rc.EnableFullDuplex()
	}
	if errors.Is(err, ErrTooLarge) {
		// Go closes it after a MaxBytesReader hit its limit; and the
		// body may be longer than the bound.
		w.Header().Set("Connection", "close")
	}
	s.fail(w, r, err)
	if !drain {
		return
	}
	_ = rc.Flush()
	_, _ = io.CopyN(io.Discard, body, maxDiscardBytes) // ends at the body's end, the bound or the read timeout
}

// wantsWait reports whether a POST /work asks to wait (?wait=D), without
// parsing an empty query: most submissions have none.
func wantsWait(r *http.Request) bool {
	return r.URL.RawQuery != "" && r.URL.Query().Has("wait")
}

// handleWork: GET /work/{id}.
func (s *Server) handleWork(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := validateID(id); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.queryTimeout)
	defer cancel()
	reply, err := s.backend.WorkStatus(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	info, ok := WorkInfoFromReply(reply)
	if !ok {
		s.fail(w, r, fmt.Errorf("%w: work %q is unknown: never accepted, or done and forgotten after the master's retention", ErrNotFound, id))
		return
	}
	info.ID = id
	if r.URL.Query().Get("history") != "true" {
		info.History = nil // asked for with ?history=true (obsroutes.go)
	}
	writeJSON(w, http.StatusOK, info)
}

// handleStatus: GET /status.
func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.queryTimeout)
	defer cancel()
	info, err := s.backend.Status(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if info.Members == nil {
		info.Members = []Member{}
	}
	if addr := s.Addr(); addr != "" {
		for i := range info.Members {
			if info.Members[i].Self && info.Members[i].HTTP == "" {
				info.Members[i].HTTP = addr
			}
		}
	}
	writeJSON(w, http.StatusOK, info)
}

// handleHealthz: GET /healthz. It reports that the HTTP server runs; use
// /status to see whether the master answers.
func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// errStatus maps err to the status code of its sentinel and the message
// without the sentinel's prefix: the one table for a whole request (fail)
// and for one item of a batch.
func errStatus(err error) (int, string) {
	code, sentinel := http.StatusInternalServerError, ErrServer
	for _, c := range []struct {
		code int
		err  error
	}{
		{http.StatusRequestEntityTooLarge, ErrTooLarge},
		{http.StatusBadRequest, ErrInvalid},
		{http.StatusNotFound, ErrNotFound},
		{http.StatusConflict, ErrConflict},
		{http.StatusNotImplemented, ErrNotImplemented},
		{http.StatusServiceUnavailable, ErrUnavailable},
	} {
		if errors.Is(err, c.err) {
			code, sentinel = c.code, c.err
			break
		}
	}
	if code == http.StatusInternalServerError && errors.Is(err, context.DeadlineExceeded) {
		code, sentinel = http.StatusServiceUnavailable, ErrUnavailable
	}
	return code, strings.TrimPrefix(err.Error(), sentinel.Error()+": ")
}

// fail writes err as {"error": ...} with the status code of its sentinel.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := errStatus(err)
	level := slog.LevelDebug
	switch {
	case code == http.StatusServiceUnavailable:
		level = slog.LevelWarn
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(s.cfg.retryAfter.Seconds()))))
	case code >= 500:
		level = slog.LevelError
	}
	s.log.Log(r.Context(), level, "http request failed", "method", r.Method, "path", r.URL.Path, "status", code, "error", msg)
	writeJSON(w, code, errorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil { // only our own types are written: a bug
		code = http.StatusInternalServerError
		body, _ = json.Marshal(errorBody{Error: "httpapi: cannot encode the answer: " + err.Error()})
	}
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	// A length, not chunks, also when the answer is flushed before the
	// handler returns (refuseBody).
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// DecodeSubmit reads the body of POST /work: one JSON object with "type"
// (required), "id" and "payload" (optional), nothing else. The payload is
// returned compacted, nil when absent or null. Errors wrap ErrInvalid (with a
// message that says what to fix) or ErrTooLarge (the reader was an
// http.MaxBytesReader that hit its limit). A body that is not valid UTF-8
// is refused with a *UTF8Error naming the offset of the first bad byte:
// the JSON decoder would replace it with U+FFFD, storing another id than
// the client sent.
func DecodeSubmit(r io.Reader) (SubmitRequest, error) {
	var req SubmitRequest
	dec := json.NewDecoder(&utf8Reader{r: r})
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return SubmitRequest{}, decodeErr(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var (
			tooLarge *http.MaxBytesError
			badText  *UTF8Error
		)
		if errors.As(err, &tooLarge) || errors.As(err, &badText) {
			return SubmitRequest{}, decodeErr(err)
		}
		return SubmitRequest{}, fmt.Errorf("%w: extra data after the JSON object; send exactly one object", ErrInvalid)
	}
	return finishSubmit(req)
}

// finishSubmit checks a decoded submission and normalises its payload:
// the part of DecodeSubmit after the JSON decoding.
func finishSubmit(req SubmitRequest) (SubmitRequest, error) {
	if req.Type == "" {
		return SubmitRequest{}, fmt.Errorf(`%w: missing "type": set it to a job type the workers run, e.g. {"type":"square","payload":7}`, ErrInvalid)
	}
	if len(req.Type) > MaxTypeLength || !printable(req.Type) {
		return SubmitRequest{}, fmt.Errorf(`%w: "type" must be at most %d bytes of printable text`, ErrInvalid, MaxTypeLength)
	}
	if req.ID != "" {
		if err := validateID(req.ID); err != nil {
			return SubmitRequest{}, err
		}
	}
	if req.UniqueKey != "" || req.UniqueFor != "" || req.ConcurrencyKey != "" {
		if err := checkKeys(req); err != nil {
			return SubmitRequest{}, err
		}
	}
	if err := checkHeartbeatTimeout(req.HeartbeatTimeout); err != nil {
		return SubmitRequest{}, err
	}
	if err := checkQueueFields(&req); err != nil {
		return SubmitRequest{}, err
	}
	switch p := bytes.TrimSpace(req.Payload); {
	case len(p) == 0 || string(p) == "null":
		req.Payload = nil
	case !bytes.ContainsAny(p, " \t\r\n"): // already compact (json.Compact only drops these)
		req.Payload = p
	default:
		var buf bytes.Buffer
		if err := json.Compact(&buf, p); err != nil { // cannot happen: the decoder validated it
			return SubmitRequest{}, fmt.Errorf(`%w: "payload" is not valid JSON: %w`, ErrInvalid, err)
		}
		req.Payload = buf.Bytes()
	}
	return req, nil
}

// decodeErr turns a json decoding error into a message for the client.
func decodeErr(err error) error {
	var (
		tooLarge *http.MaxBytesError
		syntax   *json.SyntaxError
		typ      *json.UnmarshalTypeError
		badText  *UTF8Error
	)
	switch {
	case errors.As(err, &badText):
		return fmt.Errorf("%w: %w", ErrInvalid, badText)
	case errors.As(err, &tooLarge):
		return fmt.Errorf("%w: the body is over the limit of %d bytes; send a reference to large data instead", ErrTooLarge, tooLarge.Limit)
	case errors.Is(err, io.EOF):
		return fmt.Errorf(`%w: empty body; send a JSON object like {"type":"square","payload":7}`, ErrInvalid)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the JSON body ends too early", ErrInvalid)
	case errors.As(err, &syntax):
		return fmt.Errorf("%w: malformed JSON at byte %d: %w", ErrInvalid, syntax.Offset, syntax)
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Errorf("%w: field %q must be a %s, not a JSON %s", ErrInvalid, typ.Field, typ.Type, typ.Value)
	case errors.As(err, &typ):
		return fmt.Errorf(`%w: the body must be a JSON object like {"type":"square","payload":7}, not a JSON %s`, ErrInvalid, typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return fmt.Errorf(`%w: %s; the fields are "id", "type", "payload", "unique_key", "unique_for" and "concurrency_key"`, ErrInvalid, strings.TrimPrefix(err.Error(), "json: "))
	default:
		return fmt.Errorf("%w: cannot read the body: %w", ErrInvalid, err)
	}
}

// validateID checks a work id given by a client.
func validateID(id string) error {
	if len(id) > MaxIDLength || !printable(id) {
		return fmt.Errorf("%w: work id %.40q must be 1-%d bytes of printable text", ErrInvalid, id, MaxIDLength)
	}
	return nil
}

// printable reports whether s is non-empty valid UTF-8 without control
// characters.
func printable(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
