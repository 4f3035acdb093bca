package sim

import (
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/effect"
	fecore "github.com/foreman-actors/foreman/actors/frontend/core"
	"github.com/foreman-actors/foreman/messages"
)

// feedAdapter runs the result feed's Consumer on a frontend: a ReadFeed
// becomes one ReadResults per shard's master, the answers are merged with
// MergePages (as the frontend's shell does), and the consumed results are
// the history's. The saved cursor survives the node's crash (the
// application's store).
type feedAdapter struct {
	f     *frontendHost
	a     *actor
	core  *fecore.Consumer
	gen   int // the read in flight: answers of another are stale
	after fecore.Cursor
	pages []fecore.ShardPage
	got   int
	bad   int // gone (1), ahead (2)
	old   fecore.Cursor
	// resumed: the consumer that resumes from an earlier cursor after the
	// faults stop (what it consumes is judged on its own).
	resumed bool
}

// newResumedFeed starts a second consumer on f from cursor from, once the
// cluster has healed: it must hand over every outcome after from.
func newResumedFeed(f *frontendHost, from fecore.Cursor) *feedAdapter {
	fa := newFeedAdapter(f)
	fa.resumed = true
	fa.a.pid.Id = "feed-resumed"
	f.w.hist.resumeFrom = &from
	return fa
}

func newFeedAdapter(f *frontendHost) *feedAdapter {
	w := f.w
	fa := &feedAdapter{f: f, core: fecore.NewConsumer(fecore.ConsumerConfig{
		Window: 4096, Planted: w.planted.Dedupe, FeedLimit: 50, FeedWait: 300 * time.Millisecond,
		BackoffFirst: 50 * time.Millisecond, BackoffCap: 400 * time.Millisecond,
	})}
	fa.a = w.newActor(f.n, "feed")
	fa.a.onFired = func(name string) {
		if name == "feed-timeout" {
			fa.complete()
			return
		}
		fa.step(effect.Fired{Name: name})
	}
	w.onNode(f.n, w.e.now, func() {
		saved := w.savedCursor
		if fa.resumed {
			saved = *w.hist.resumeFrom
		} else {
			w.hist.feedIncarnation()
		}
		fa.step(fecore.CursorLoaded{Cursor: saved, OK: true})
	})
	return fa
}

func (fa *feedAdapter) step(in any) {
	if !fa.a.live() {
		return
	}
	for _, e := range fa.core.Step(fa.a.now(), in) {
		switch e := e.(type) {
		case fecore.ReadFeed:
			fa.read(e)
		case fecore.Consumed:
			if fa.resumed {
				fa.f.w.hist.resumedConsumed(e.Result, e.Seq)
			} else {
				fa.f.w.hist.feedConsumed(e.Result, e.Seq)
			}
		case fecore.Duplicate:
		case fecore.SaveCursor:
			if !fa.resumed {
				fa.f.w.savedCursor = e.Cursor
				fa.f.w.cursors = append(fa.f.w.cursors, e.Cursor)
			}
		default:
			fa.a.apply([]effect.Effect{e})
		}
	}
}

// read fans a ReadFeed out to every shard's master.
func (fa *feedAdapter) read(r fecore.ReadFeed) {
	w := fa.f.w
	fa.f.next++
	fa.gen = fa.f.next
	fa.after, fa.got, fa.bad = r.After, 0, 0
	fa.pages = make([]fecore.ShardPage, w.cfg.Shards)
	for k := range w.cfg.Shards {
		fa.pages[k] = fecore.ShardPage{Shard: k}
		from := &messages.PID{Address: fa.f.n.name, Id: "feed/" + strconv.Itoa(fa.gen) + "/" + strconv.Itoa(k)}
		w.send(fa.f.n, from, &messages.PID{Id: masterID(k)}, &messages.ReadResults{
			AfterSeq: r.After.Seq(k), Limit: int32(r.Limit), WaitMs: r.Wait.Milliseconds()})
	}
	fa.a.apply([]effect.Effect{effect.Timer{Name: "feed-timeout", At: fa.a.now().Add(r.Wait + 500*time.Millisecond)}})
}

// answer takes one shard's page.
func (fa *feedAdapter) answer(shard int, msg proto.Message) {
	p, ok := msg.(*messages.ResultsPage)
	if !ok || shard < 0 || shard >= len(fa.pages) || fa.pages[shard].Page != nil {
		return
	}
	switch {
	case p.GetGone():
		fa.bad, fa.old = 1, fa.after.With(shard, p.GetOldestSeq())
	case p.GetAhead():
		fa.bad = 2
	case p.GetError() != "":
		return // the shard did not answer; its cursor stays
	}
	fa.pages[shard].Page = p
	fa.got++
	if fa.got == len(fa.pages) {
		fa.complete()
	}
}

// complete steps the consumer with the read's outcome.
func (fa *feedAdapter) complete() {
	gen := fa.gen
	fa.gen = -1 // later answers are stale
	if gen < 0 {
		return
	}
	fa.a.apply([]effect.Effect{effect.StopTimer{Name: "feed-timeout"}})
	switch {
	case fa.bad == 1:
		fa.step(fecore.FeedGone{Oldest: fa.old})
	case fa.bad == 2:
		fa.step(fecore.FeedAhead{})
	case fa.got == 0:
		fa.step(fecore.FeedFailed{})
	default:
		var pages []fecore.ShardPage
		for _, p := range fa.pages {
			if p.Page != nil {
				pages = append(pages, p)
			}
		}
		fa.step(fecore.FeedRead{Page: fecore.MergePages(fa.after, pages...)})
	}
}
