package sim

import (
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	fecore "github.com/foreman-actors/foreman/actors/frontend/core"
	waitcore "github.com/foreman-actors/foreman/actors/waiter/core"
	"github.com/foreman-actors/foreman/messages"
)

// frontendHost is a frontend node: the callers' submissions (the
// frontend's Submission core), the interests of the callers that wait
// (the waiter's Interest core), and the result feed's consumer (the
// frontend's Consumer core). The callers themselves are the sim's
// workload (client.go). Adapters only: each turns the core's effects into
// model events and what reaches it into the core's inputs.
type frontendHost struct {
	w *world
	n *node
	// actors by id: submissions "sub/<n>/<attempt>" reply addresses,
	// interests "interest/<n>", feed reads "feed/<n>/<shard>".
	subs      map[int]*subAdapter
	interests map[int]*interestAdapter
	feed      *feedAdapter
	resumed   *feedAdapter
	next      int
}

func newFrontend(w *world, n *node) host { return &frontendHost{w: w, n: n} }

func (f *frontendHost) start() {
	f.subs = map[int]*subAdapter{}
	f.interests = map[int]*interestAdapter{}
	f.feed, f.resumed = nil, nil
	if f.n == f.w.frontends[0] {
		f.feed = newFeedAdapter(f)
	}
}

func (f *frontendHost) viewChanged() {}

// deliver routes a message to the submission, interest or feed read it
// is addressed to; an unknown address is a dead letter.
func (f *frontendHost) deliver(from *messages.PID, id string, msg proto.Message) bool {
	kind, k, rest := splitID(id)
	switch kind {
	case "sub":
		if s := f.subs[k]; s != nil {
			attempt, _ := strconv.ParseUint(rest, 10, 64)
			s.step(fecore.Answered{Attempt: attempt, Msg: msg})
			return true
		}
	case "interest":
		if in := f.interests[k]; in != nil {
			return in.deliver(from, msg)
		}
	case "feed":
		shard, _ := strconv.Atoi(rest)
		for _, fa := range []*feedAdapter{f.feed, f.resumed} {
			if fa != nil && fa.gen == k {
				fa.answer(shard, msg)
				return true
			}
		}
	}
	return false
}

// deadLetter is the network's notice that a message this node sent found
// no actor: an ask's dead letter is Unreachable.
func (f *frontendHost) deadLetter(from string, to *messages.PID, msg proto.Message) {
	kind, k, rest := splitID(from)
	if kind == "sub" {
		if s := f.subs[k]; s != nil {
			attempt, _ := strconv.ParseUint(rest, 10, 64)
			s.step(fecore.Unreachable{Attempt: attempt})
		}
	}
}

// subAdapter runs one Submission: one caller's Submit, SubmitMany chunk
// or Call.
type subAdapter struct {
	f      *frontendHost
	k      int
	a      *actor
	core   *fecore.Submission
	works  []*messages.Work
	wait   bool
	in     *interestAdapter // a Call's interest
	caller *caller
	left   bool // a Call's caller left or was answered
	acked  bool // a Call's caller was told its work is accepted
	cut    bool // a worker gave up on its waiter unheard (cutOff)
}

func (f *frontendHost) submit(c *caller, works []*messages.Work, wait bool, deadline time.Time) *subAdapter {
	f.next++
	k := f.next
	s := &subAdapter{f: f, k: k, works: works, wait: wait, caller: c}
	s.a = f.w.newActor(f.n, "sub/"+strconv.Itoa(k))
	if wait {
		s.in = f.newInterest(s)
		works[0].Waiter = s.in.a.pid
	}
	s.core = fecore.NewSubmission(fecore.SubmitConfig{
		Shards: f.w.cfg.Shards, AskTimeout: 400 * time.Millisecond, Wait: wait, Deadline: deadline,
		Backoff:      fecore.Backoff{Min: 20 * time.Millisecond, Max: 300 * time.Millisecond},
		PollInterval: 700 * time.Millisecond,
	}, works...)
	s.a.onFired = func(name string) { s.step(effect.Fired{Name: name}) }
	f.subs[k] = s
	for _, w := range works {
		j := f.w.hist.job(w.GetWorkId())
		j.submitted = true
		if wait {
			f.w.hist.callerWaits(j)
		} else {
			j.detached = true
		}
	}
	s.step(fecore.Begin{})
	return s
}

func (s *subAdapter) step(in any) {
	if !s.a.live() {
		return
	}
	s.run(s.core.Step(s.a.now(), in))
}

func (s *subAdapter) run(effs []effect.Effect) {
	for _, e := range effs {
		if !s.a.live() {
			return
		}
		switch e := e.(type) {
		case fecore.Ask:
			to := &messages.PID{Id: masterID(e.Shard)}
			from := &messages.PID{Address: s.f.n.name, Id: "sub/" + strconv.Itoa(s.k) + "/" + strconv.FormatUint(e.Attempt, 10)}
			if s.f.w.placement(s.f.n, e.Shard) == nil {
				s.f.w.onNode(s.f.n, s.f.w.e.now, func() { s.step(fecore.Unreachable{Attempt: e.Attempt}) })
				continue
			}
			s.f.w.send(s.f.n, from, to, e.Msg)
		case fecore.Forget:
		case fecore.Submitted:
			for _, o := range e.Outcomes {
				if o.Status == fecore.StatusAccepted {
					s.f.w.hist.clientAcked(o.WorkID)
					if s.wait && !s.left && !s.acked && !s.cut {
						s.acked = true
						s.f.w.hist.job(o.WorkID).waitingAcked++
					}
				}
			}
			if !s.wait {
				delete(s.f.subs, s.k)
			}
		case fecore.Outcome:
			delete(s.f.subs, s.k)
			if e.Result == nil {
				s.callerGone()
			}
			s.unwait()
			s.left = true
			if e.Result != nil {
				s.f.w.hist.toldOutcome(e.Result.GetWorkId(), e.Result.GetStatus(), e.Result.GetResult())
				if s.in != nil {
					s.in.step(waitcore.Closed{})
				}
			} else if s.in != nil {
				// The caller left (or was never acknowledged): its interest
				// hears it from the caller's ctx, as the shell's does.
				s.in.step(waitcore.CallerGone{Reason: waitcore.ReasonCancelled})
			}
		default:
			s.a.apply([]effect.Effect{e})
		}
	}
}

// leave is the caller's ctx ending: cancelled or past its deadline.
func (s *subAdapter) leave() {
	s.callerGone()
	if s.in != nil && s.in.a.live() {
		s.in.step(waitcore.CallerGone{Reason: waitcore.ReasonCancelled})
	}
	s.step(fecore.CallerLeft{})
}

// callerGone records a Call's caller leaving without the outcome.
func (s *subAdapter) callerGone() {
	if s.wait && !s.left {
		s.unwait()
		s.left = true
		s.f.w.hist.callerLeft(s.works[0].GetWorkId())
	}
}

// unwait: an acknowledged caller no longer waits.
func (s *subAdapter) unwait() {
	if s.acked {
		s.acked = false
		s.f.w.hist.job(s.works[0].GetWorkId()).waitingAcked--
	}
}

// crashed: the node died with its callers.
func (f *frontendHost) crashed() {
	for k := 1; k <= f.next; k++ {
		if s := f.subs[k]; s != nil {
			s.callerGone()
		}
	}
}

// interestAdapter runs a Call's Interest: the waiter that workers ask.
type interestAdapter struct {
	f    *frontendHost
	k    int
	a    *actor
	core *waitcore.Interest
	sub  *subAdapter
}

func (f *frontendHost) newInterest(s *subAdapter) *interestAdapter {
	f.next++
	in := &interestAdapter{f: f, k: f.next, sub: s, core: waitcore.NewInterest(waitcore.InterestConfig{
		Linger: 2 * time.Second, ReleaseLinger: 5 * time.Second,
	})}
	in.a = f.w.newActor(f.n, "interest/"+strconv.Itoa(in.k))
	in.a.onFired = func(name string) { in.step(effect.Fired{Name: name}) }
	f.interests[in.k] = in
	return in
}

func (in *interestAdapter) deliver(from *messages.PID, msg proto.Message) bool {
	switch m := msg.(type) {
	case *messages.AreYouStillInterested:
		in.step(waitcore.Asked{From: from, WorkID: m.GetWorkId()})
	case *messages.WorkResult:
		in.step(waitcore.Outcome{Result: m})
	case *messages.DetachWaiter:
		in.step(waitcore.Released{})
	}
	return true
}

func (in *interestAdapter) step(x any) {
	if !in.a.live() {
		return
	}
	for _, e := range in.core.Step(in.a.now(), x) {
		switch e := e.(type) {
		case waitcore.Deliver:
			in.sub.step(fecore.Delivered{Result: e.Result})
		case waitcore.Stop:
			in.a.stopped = true
			delete(in.f.interests, in.k)
		default:
			in.a.apply([]effect.Effect{e})
		}
	}
}

// splitID splits "kind/k/rest".
func splitID(id string) (kind string, k int, rest string) {
	var parts [3]string
	n := 0
	start := 0
	for i := 0; i <= len(id) && n < 3; i++ {
		if i == len(id) || (id[i] == '/' && n < 2) {
			parts[n] = id[start:i]
			n++
			start = i + 1
		}
	}
	k, _ = strconv.Atoi(parts[1])
	return parts[0], k, parts[2]
}

// cutOff: a worker gave up on the waiter at pid without hearing from it
// (a partition, a lost question): its caller, though it may still wait,
// no longer counts as one the job must not be cancelled for.
func (w *world) cutOff(pid *messages.PID) {
	n := w.byName[pid.GetAddress()]
	if n == nil {
		return
	}
	fh, ok := w.hosts[n.idx].(*frontendHost)
	if !ok || fh.interests == nil {
		return
	}
	if kind, k, _ := splitID(pid.GetId()); kind == "interest" {
		if in := fh.interests[k]; in != nil {
			in.sub.cut = true
			in.sub.unwait()
		}
	}
}
