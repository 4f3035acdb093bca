package sim

import (
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	routecore "github.com/foreman-actors/foreman/actors/route/core"
	"github.com/foreman-actors/foreman/messages"
)

// caller is one client of the workload: it submits jobs through its
// frontend (single ones and batches), waits for some, gives up on some,
// cancels some, and re-submits ids it used before. Its choices are drawn
// from the seed; what happens to them is the cores'.
type caller struct {
	w   *world
	k   int
	f   *node
	ids []string
}

// scheduleClients draws each client's submissions over [0, until).
func (w *world) scheduleClients(until time.Duration) {
	for k := range w.cfg.Clients {
		c := &caller{w: w, k: k, f: w.frontends[k%len(w.frontends)]}
		for j := range w.cfg.Jobs {
			at := w.e.between(0, until*3/4)
			j := j
			w.e.at(at, func() { c.act(j) })
		}
	}
}

// act makes one submission: a Call (waits, may give up or cancel), a
// Submit, a batch, or a re-submission of an id used before.
func (c *caller) act(j int) {
	w := c.w
	f := c.f
	if !f.up {
		return // the caller's process is down with its frontend
	}
	fh := w.hosts[f.idx].(*frontendHost)
	if w.cfg.Fair && c.k == 0 && j == 0 {
		c.flood(fh) // inv_fair.go
		return
	}
	id := "c" + strconv.Itoa(c.k) + "j" + strconv.Itoa(j)
	roll := w.e.rng.Float64()
	if roll < 0.25 && len(c.ids) > 0 {
		id = c.ids[w.e.intn(len(c.ids))] // the same id again
		roll = w.e.rng.Float64() * 0.6
	}
	if w.cfg.Keys {
		id = keyedID(id, w.cfg.Shards)
	}
	if u, _, _ := keysOf(id); w.cfg.Keys && u != "" && roll < 0.5 {
		// A duplicate's caller waits for the job it duplicates, which
		// the history does not follow: unique jobs are submitted
		// without waiting (Submit or batch).
		roll = 0.5 + roll/2
	}
	c.ids = append(c.ids, id)
	work := func(id string) *messages.Work {
		wk := &messages.Work{WorkId: id, JobType: "t", Payload: []byte(id)}
		if w.cfg.Keys {
			wk.UniqueKey, wk.UniqueForNanos, wk.ConcurrencyKey = keysOf(id)
		}
		if w.cfg.Fair {
			wk.FairnessKey = fairKeyOf(id)
		}
		if d := delayOf(id); d > 0 { // a delayed job (issue 37): NeverEarly
			wk.RunAtUnixNano = f.local(w.e.now).Add(d).UnixNano()
		}
		return wk
	}
	switch {
	case roll < 0.5: // a Call: waits for the outcome
		var deadline time.Time
		if w.e.chance(0.3) {
			deadline = f.local(w.e.now).Add(w.e.between(50*time.Millisecond, 2*time.Second))
		}
		s := fh.submit(c, []*messages.Work{work(id)}, true, deadline)
		if w.e.chance(0.35) { // the caller cancels after a while
			w.onNode(f, w.e.now+w.e.between(time.Millisecond, 1500*time.Millisecond), func() {
				if fh.subs[s.k] == s {
					w.e.tracef(f.name, "caller of %s cancels", id)
					s.leave()
				}
			})
		}
		if !deadline.IsZero() {
			w.onNode(f, f.trueAt(deadline), func() {
				if s.in != nil {
					s.leave()
				}
			})
		}
	case roll < 0.75: // a Submit: does not wait
		fh.submit(c, []*messages.Work{work(id)}, false, time.Time{})
	default: // a batch, split by shard as SubmitMany does
		n := 2 + w.e.intn(3)
		byShard := make([][]*messages.Work, w.cfg.Shards)
		for i := range n {
			bid := id + "b" + strconv.Itoa(i)
			if w.cfg.Keys {
				bid = keyedID(bid, w.cfg.Shards)
			}
			c.ids = append(c.ids, bid)
			s := routecore.ShardOf(bid, w.cfg.Shards)
			byShard[s] = append(byShard[s], work(bid))
		}
		for _, ws := range byShard {
			if len(ws) > 0 {
				fh.submit(c, ws, false, time.Time{})
			}
		}
	}
}

// keysOf draws a job's keys from its id (with Config.Keys), with no random
// number, so that the schedule's draws stay those of a run without keys: a
// quarter of the ids share one of 3 unique keys (held an hour), a quarter
// one of 3 concurrency keys. The id's "~N" suffix (keyedID) is ignored.
func keysOf(id string) (unique string, uniqueFor int64, concurrency string) {
	base, _, _ := strings.Cut(id, "~")
	h := fnv.New32a()
	_, _ = h.Write([]byte(base))
	v := h.Sum32()
	switch v % 4 {
	case 0:
		return "u" + strconv.Itoa(int(v/4%3)), int64(time.Hour), ""
	case 1:
		return "", 0, "k" + strconv.Itoa(int(v/4%3))
	}
	return "", 0, ""
}

// keyedID is id on its key's shard (route.KeyedID), as the HTTP API gives
// keyed jobs.
func keyedID(id string, shards int) string {
	u, _, c := keysOf(id)
	key := c
	if key == "" {
		key = u
	}
	return routecore.KeyedID(id, key, shards)
}
