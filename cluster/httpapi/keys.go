package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/foreman-actors/foreman/actors/frontend"
	mastercore "github.com/foreman-actors/foreman/actors/master/core"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/messages"
)

// Unique and concurrency keys on submissions (issue 37 items 5 and 6;
// docs/scheduling.md): the request's fields, their checks, and the 200 that
// answers a duplicate.

// MaxUniqueFor caps a submission's unique_for.
const MaxUniqueFor = 366 * 24 * time.Hour

// ShardCounter is a Backend that says over how many shards it routes:
// the server then picks ids of keyed jobs on their key's shard.
// [ActorBackend] implements it.
type ShardCounter interface {
	Shards() int
}

// Shards returns how many shards the backend's client routes over.
func (b *ActorBackend) Shards() int { return b.client.Shards() }

// checkKeys validates the key fields of a decoded submission.
func checkKeys(req SubmitRequest) error {
	for _, f := range []struct{ name, v string }{{"unique_key", req.UniqueKey}, {"concurrency_key", req.ConcurrencyKey}} {
		if f.v != "" && (len(f.v) > mastercore.MaxKeyLen || !printable(f.v)) {
			return fmt.Errorf(`%w: "%s" must be 1-%d bytes of printable text, e.g. {"type":"report","%s":"tenant-42"}`, ErrInvalid, f.name, mastercore.MaxKeyLen, f.name)
		}
	}
	if req.UniqueFor == "" {
		return nil
	}
	if req.UniqueKey == "" {
		return fmt.Errorf(`%w: "unique_for" needs "unique_key", e.g. {"type":"report","unique_key":"invoice-42","unique_for":"1h"}`, ErrInvalid)
	}
	if _, err := parseUniqueFor(req.UniqueFor); err != nil {
		return err
	}
	return nil
}

// parseUniqueFor reads unique_for: a Go duration from 0 to MaxUniqueFor.
func parseUniqueFor(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > MaxUniqueFor {
		return 0, fmt.Errorf(`%w: "unique_for" %.20q is not a duration from 0 to %v; give a Go duration, e.g. "unique_for":"1h30m"`, ErrInvalid, v, MaxUniqueFor)
	}
	return d, nil
}

// withKeys sets w's key fields from req (checked by checkKeys).
func withKeys(w *messages.Work, req SubmitRequest) *messages.Work {
	w.UniqueKey, w.ConcurrencyKey = req.UniqueKey, req.ConcurrencyKey
	d, _ := parseUniqueFor(req.UniqueFor)
	w.UniqueForNanos = int64(d)
	return w
}

// keyedID puts a keyed work's id on its key's shard (route.KeyedID): the
// id, suffixed "~N" when it falls elsewhere. The same id always gets the
// same suffix, so a retried POST is still the same job; the answer gives
// the id to use (only a cluster of several shards suffixes any).
func (s *Server) keyedID(w *messages.Work) {
	sc, ok := s.backend.(ShardCounter)
	if !ok {
		return
	}
	if key := mastercore.RouteKey(w); key != "" {
		w.WorkId = route.KeyedID(w.GetWorkId(), key, sc.Shards())
	}
}

// duplicateOf returns the duplicate err reports (nil when it is none).
func duplicateOf(err error) *frontend.DuplicateError {
	var dup *frontend.DuplicateError
	if errors.As(err, &dup) {
		return dup
	}
	return nil
}

// writeDuplicate answers a submission whose unique key another job holds:
// 200 with that job's id and status, and its Location.
func writeDuplicate(w http.ResponseWriter, dup *frontend.DuplicateError) {
	w.Header().Set("Location", PathWork+"/"+url.PathEscape(dup.Of))
	writeJSON(w, http.StatusOK, SubmitResponse{ID: dup.Of, DuplicateOf: dup.Of, Status: dupStatus(dup.Status)})
}

// dupStatus names a holder's status ("" when the name is unknown).
func dupStatus(st messages.WorkStatus) string {
	name, _ := statusName(st)
	return name
}
