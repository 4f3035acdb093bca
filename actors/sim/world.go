package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	fecore "github.com/foreman-actors/foreman/actors/frontend/core"
	routecore "github.com/foreman-actors/foreman/actors/route/core"
	"github.com/foreman-actors/foreman/messages"
)

// host is what runs on a node: the role adapters of its kind.
type host interface {
	// start builds the node's cores afresh: at the beginning and after a
	// restart (what was not journaled is gone).
	start()
	// deliver hands a message addressed to the actor id on this node; false
	// when no such actor runs there (a dead letter).
	deliver(from *messages.PID, id string, msg proto.Message) bool
	// viewChanged tells the node its membership view changed.
	viewChanged()
}

// deadLetterer is a host told of its messages that found no actor.
type deadLetterer interface {
	deadLetter(fromID string, to *messages.PID, msg proto.Message)
}

// crasher is a host told of its node's crash (what dies with it).
type crasher interface{ crashed() }

// world is one simulated cluster: the engine, the models and the nodes.
type world struct {
	cfg    Config
	e      *engine
	nodes  []*node // every node, journal's last; index = node.idx
	procs  []*node // the process nodes (not the journal's)
	byName map[string]*node
	// shardKinds are the cluster kinds of the shards' masters (every
	// backend hosts them all); members is placement's scratch list.
	shardKinds []string
	members    []routecore.Member
	hosts      []host // [node.idx]; nil for the journal

	backends, frontends, workers []*node

	net  *network
	jr   *journal
	view *membership

	// maxAttempts is the retry policy's maximum, for AttemptsBounded (0:
	// unbounded).
	maxAttempts int

	faults  [numFaults]int
	healing bool // faults stopped; the cluster settles
	hist    *history

	makeHost hostFactory // nil: the real cluster's (tests plant others)

	planted     Bugs
	savedCursor fecore.Cursor   // the feed consumer's store: survives its crash
	cursors     []fecore.Cursor // every cursor it saved, in order

	sched *schedWorld // the schedules' record (schedule.go); nil without Config.Schedules
}

func newWorld(cfg Config) *world {
	w := &world{cfg: cfg, e: newEngine(cfg.Seed, cfg.Trace), byName: map[string]*node{}, planted: cfg.Planted, maxAttempts: maxAttempts}
	for k := range cfg.Shards {
		w.shardKinds = append(w.shardKinds, routecore.ShardKind("master", k, cfg.Shards))
	}
	add := func(kind nodeKind, name string) *node {
		n := &node{idx: len(w.nodes), name: name, kind: kind, up: true}
		w.nodes = append(w.nodes, n)
		w.byName[name] = n
		if kind != kindJournal {
			w.procs = append(w.procs, n)
		}
		return n
	}
	for i := range cfg.Backends {
		w.backends = append(w.backends, add(kindBackend, "b"+strconv.Itoa(i)))
	}
	for i := range cfg.Frontends {
		w.frontends = append(w.frontends, add(kindFrontend, "f"+strconv.Itoa(i)))
	}
	for i := range cfg.Workers {
		w.workers = append(w.workers, add(kindWorker, "w"+strconv.Itoa(i)))
	}
	db := add(kindJournal, "db")
	for _, n := range w.procs {
		if d := cfg.Faults.MaxDrift; d > 0 {
			n.drift = (w.e.rng.Float64()*2 - 1) * d
		}
		n.offset = w.e.between(-time.Second, time.Second)
	}
	w.hosts = make([]host, len(w.nodes))
	w.net = newNetwork(w.e, len(w.nodes), cfg.Faults)
	w.jr = &journal{w: w, db: db, streams: map[string]*stream{}, writeErr: cfg.Faults.WriteError,
		fsyncMin: 500 * time.Microsecond, fsyncMax: 5 * time.Millisecond}
	w.view = newMembership(w, len(w.nodes))
	w.hist = newHistory(w)
	w.jr.onDurable = w.hist.durable
	return w
}

// send carries a message from an actor to another over the network. An
// address without a node is a shard's master, placed by the sender's
// membership view.
func (w *world) send(from *node, fromPID, to *messages.PID, msg proto.Message) {
	if to == nil {
		return
	}
	dest := w.byName[to.GetAddress()]
	if to.GetAddress() == "" {
		if s, ok := shardOfID(to.GetId()); ok {
			dest = w.placement(from, s)
		}
	}
	if dest == nil {
		w.e.tracef(from.name, "send to %s/%s: nowhere to deliver", to.GetAddress(), to.GetId())
		return
	}
	id := to.GetId()
	works := w.hist.sent(dest, msg)
	w.transmit(from, dest, func() {
		if w.e.tracing() {
			w.e.tracef(dest.name, "%s <- %s/%s %s", id, fromPID.GetAddress(), fromPID.GetId(), msgText(msg))
		}
		w.hist.delivered(works)
		if w.hosts[dest.idx].deliver(fromPID, id, msg) {
			return
		}
		// A dead letter: protoactor tells the sender of a request.
		if dl, ok := w.hosts[from.idx].(deadLetterer); ok {
			w.transmit(dest, from, func() { dl.deadLetter(fromPID.GetId(), to, msg) })
		}
	})
}

// masterID is the actor id of shard s's master.
func masterID(s int) string { return "master/" + strconv.Itoa(s) }

func shardOfID(id string) (int, bool) {
	rest, ok := strings.CutPrefix(id, "master/")
	if !ok {
		return 0, false
	}
	s, err := strconv.Atoi(rest)
	return s, err == nil
}

// placement is the backend that observer's view places shard s on: the
// cluster's own decision, route/core's Owner (protoactor's rendezvous over
// the members that host the shard's kind), over the backends observer
// sees. Views that agree place alike; a backend's loss moves only its
// shards.
func (w *world) placement(observer *node, s int) *node {
	members := w.members[:0]
	for _, b := range w.backends {
		if w.view.sees(observer, b) {
			members = append(members, routecore.Member{ID: b.name, Address: b.name, Kinds: w.shardKinds})
		}
	}
	w.members = members
	owner := routecore.Owner(members, w.shardKinds[s], routecore.ShardName("master", s, w.cfg.Shards))
	if owner == "" {
		return nil
	}
	return w.byName[owner]
}

// crash stops n at once: its state is gone, its unsynced journal writes
// are lost, and the others notice after their detection delays.
func (w *world) crash(n *node) {
	w.e.tracef(n.name, "fault crash")
	if c, ok := w.hosts[n.idx].(crasher); ok {
		c.crashed()
	}
	n.up = false
	n.inc++
	n.pausedUntil = 0
	w.jr.crashed(n)
	w.view.changed(n, false)
}

// restart starts n again with fresh cores.
func (w *world) restart(n *node) {
	if n.up {
		return
	}
	w.e.tracef(n.name, "restart")
	n.up = true
	n.inc++
	w.hosts[n.idx].start()
	w.view.changed(n, true)
}

// paused tells the membership of a pause long enough to be noticed.
func (w *world) paused(n *node, d time.Duration) {
	if d > w.view.max {
		w.view.changed(n, false)
		w.e.after(d, func() {
			if n.up {
				w.view.changed(n, true)
			}
		})
	}
}

// viewChanged tells o's roles its view changed.
func (w *world) viewChanged(o *node) {
	if h := w.hosts[o.idx]; h != nil && o.up {
		w.onNode(o, w.e.now, h.viewChanged)
	}
}

// stopFaults ends the fault schedule: links heal, crashed nodes restart,
// no message is lost any more, and views become true.
func (w *world) stopFaults() {
	w.healing = true
	w.e.tracef("sim", "faults stop; the cluster heals")
	w.net.heal()
	w.net.loss, w.net.dup, w.net.reorder = 0, 0, 0
	w.jr.writeErr = 0
	for _, n := range w.procs {
		if n.pausedUntil > w.e.now {
			n.pausedUntil = w.e.now
		}
		if !n.up {
			w.restart(n)
		}
	}
	w.view.healAll()
	// A consumer that resumes from one of the cursors saved during the
	// faults (or from the start) must miss nothing after it.
	from := fecore.Cursor{}
	if n := len(w.cursors); n > 0 {
		if k := w.e.intn(n + 1); k < n {
			from = w.cursors[k]
		}
	}
	f := w.frontends[len(w.frontends)-1]
	w.e.after(w.cfg.Heal/4, func() {
		if fh, ok := w.hosts[f.idx].(*frontendHost); ok && f.up {
			fh.resumed = newResumedFeed(fh, from)
		}
	})
}

func (w *world) String() string { return fmt.Sprintf("world(seed %d)", w.cfg.Seed) }
