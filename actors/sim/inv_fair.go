package sim

import (
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	routecore "github.com/foreman-actors/foreman/actors/route/core"
	"github.com/foreman-actors/foreman/messages"
)

// FairnessBounded checks issue 37's fair dispatch (item 4: a key with
// 100,000 jobs queued delays another key's job by at most about one job
// per worker slot), on runs with Config.Fair, as the master's core
// promises it (actors/master/core/pending.go): within a job type, the due
// works of each fairness key form a lane; the hand-out serves the lanes
// in a rotation, weight(key) works per turn, and a key that gets due work
// joins the rotation at its back. Priorities and aging order the works
// within a lane only, so they do not enter the bound.
//
// The statement. Let J be a work of key B and job type T, without a
// concurrency key, that sits in its lane at master activation A (due,
// its acceptance durable and released; WorkState.Due). While J stays
// there, A hands out at most
//
//	bound(B) = Σ weight(X) over the workload's keys X ≠ B
//
// works of type T of other keys between two hand-outs of B's works (or
// from J's arrival in the lane to B's next hand-out): B's lane is in the
// rotation all that time (J keeps it non-empty), so every other lane has
// at most one turn before B's, the lane being served only what is left of
// its turn. The count is A's alone: a new activation (a takeover, a
// restart) rebuilds the rotation from the journal in another order, so a
// wait across k takeovers is bounded by (1+k)·bound(B), each activation's
// share by bound(B). Requeues (failures, time-outs, hand-backs, recovery)
// put a work back in its lane as a new arrival; they need no slack, since
// a work is judged only while it sits in its lane.
//
// A hand-out is judged when A decides it: at the WorkStarted (or
// WorksStarted) A appends, with A's state right after that request's
// hand-outs. A work in its lane then was in it at the request's first
// pick (promotions from the timer heap and returns of parked works happen
// before it), so the request's hand-outs passed it.
//
// Not judged: a work with a concurrency key can leave its lane while its
// key is full (parked) and rejoin at the back between two requests, which
// A's state after each request does not show; with Config.Keys those
// works wait unjudged (the others still are).
type FairnessBounded struct{}

// Name identifies the invariant.
func (FairnessBounded) Name() string { return "fairness_bounded" }

// The workload's fairness keys (Config.Fair): "f" floods, "a" is weighed
// double, "b" and "" (no key) are light.
const floodKey = "f"

var fairKeys = [...]string{"", "a", "b", floodKey}

// fairWeights are the masters' weights with Config.Fair (nil without).
func fairWeights(fair bool) map[string]int {
	if !fair {
		return nil
	}
	return map[string]int{"a": 2}
}

func fairWeight(key string) int {
	if w, ok := fairWeights(true)[key]; ok {
		return w
	}
	return 1
}

// fairBound is bound(B): the other keys' weights.
func fairBound(key string) int {
	n := 0
	for _, k := range fairKeys {
		if k != key {
			n += fairWeight(k)
		}
	}
	return n
}

// floodJobs is how many jobs the flood submits at once.
const floodJobs = 48

// fairKeyOf is the fairness key of work id (with Config.Fair), drawn from
// the id, with no random number: the flood's jobs have "f", the others
// each of the four keys about equally often.
func fairKeyOf(id string) string {
	base, _, _ := strings.Cut(id, "~")
	if strings.HasPrefix(base, "flood") {
		return floodKey
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(base))
	_, _ = h.Write([]byte("#fair"))
	return fairKeys[h.Sum32()%uint32(len(fairKeys))]
}

// flood submits floodJobs jobs of the flood key at once (Submit, split by
// shard as SubmitMany does).
func (c *caller) flood(fh *frontendHost) {
	w := c.w
	byShard := make([][]*messages.Work, w.cfg.Shards)
	for i := range floodJobs {
		id := "flood" + strconv.Itoa(c.k) + "n" + strconv.Itoa(i)
		if w.cfg.Keys {
			id = keyedID(id, w.cfg.Shards)
		}
		wk := &messages.Work{WorkId: id, JobType: "t", Payload: []byte(id), FairnessKey: floodKey}
		if w.cfg.Keys {
			wk.UniqueKey, wk.UniqueForNanos, wk.ConcurrencyKey = keysOf(id)
		}
		s := routecore.ShardOf(id, w.cfg.Shards)
		byShard[s] = append(byShard[s], wk)
	}
	w.e.tracef(c.f.name, "client %d floods key %q with %d jobs", c.k, floodKey, floodJobs)
	for _, ws := range byShard {
		if len(ws) > 0 {
			fh.submit(c, ws, false, time.Time{})
		}
	}
}

// handOuts judges the hand-outs in events, which activation act appends
// (FairnessBounded).
func (h *history) handOuts(act *activation, events []proto.Message) {
	var ids []string
	for _, ev := range events {
		switch m := ev.(type) {
		case *messages.WorkStarted:
			ids = append(ids, m.GetWorkId())
		case *messages.WorksStarted:
			ids = append(ids, m.GetWorkIds()...)
		}
	}
	if len(ids) == 0 {
		return
	}
	for _, inv := range h.inv {
		if c, ok := inv.(FairnessBounded); ok {
			c.handOuts(h, act, ids)
		}
	}
}

// servingTerm is one activation serving under one epoch: an activation
// that recovers in place (a journal write failed) takes a new epoch and
// rebuilds its rotation from the journal, as a takeover does, so the count
// starts again (seed 3000078 with Keys and Fair: b1/master/0#0.1 counted
// across its recovery from epoch 2 to 3).
type servingTerm struct {
	act   *activation
	epoch int64
}

func (i FairnessBounded) handOuts(h *history, act *activation, ids []string) {
	st := act.m.State()
	if h.waits == nil {
		h.waits = make(map[servingTerm]map[string]int)
	}
	term := servingTerm{act: act, epoch: act.epoch}
	waits := h.waits[term]
	if waits == nil {
		waits = make(map[string]int)
		h.waits[term] = waits
	}
	// The works in their lanes now, in the history's order (no map order),
	// each with the fairness key it carries: the key the master files it
	// under. Not the key the workload draws from its id (fairKeyOf): the
	// scheduler's ticks carry none, whatever their ids hash to (seed
	// 7000026 with Keys, Fair and Schedules).
	var lined []string
	var keyOf []string
	for _, id := range h.ids {
		if !st.Due(id) {
			delete(waits, id) // out of its lane: a later arrival is judged anew
			continue
		}
		wk := st.Work(id)
		if wk.GetConcurrencyKey() != "" {
			delete(waits, id)
			continue
		}
		lined = append(lined, id)
		keyOf = append(keyOf, wk.GetFairnessKey())
	}
	for _, x := range ids {
		key, jt := st.Work(x).GetFairnessKey(), st.JobType(x)
		for j, y := range lined {
			if st.JobType(y) != jt {
				continue
			}
			b := keyOf[j]
			if b == key {
				waits[y] = 0 // its key had a turn
				continue
			}
			waits[y]++
			if n := waits[y]; n > fairBound(b) {
				h.violate(i, y, act.st.name, "%s (key %q) waited in its lane while %s handed out %d works of other keys since its key's last turn, %s (key %q) the last; bound %d (the other keys' weights)",
					y, b, act.holder, n, x, key, fairBound(b))
				return
			}
		}
	}
}
