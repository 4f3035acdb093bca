package sim

import (
	"time"
)

// faultKind names a kind of fault, for the report's counts.
type faultKind int

const (
	faultLoss faultKind = iota
	faultDuplicate
	faultReorder
	faultWriteError
	faultPartition
	faultOneWay
	faultCrash
	faultPause
	faultSuspicion
	numFaults
)

var faultNames = [numFaults]string{"loss", "duplicate", "reorder", "write_error", "partition", "one_way_partition", "crash", "pause", "false_suspicion"}

// String returns the fault kind's name.
func (k faultKind) String() string { return faultNames[k] }

// scheduleFaults draws the schedule of node and link faults in
// [0, until): each kind's occurrences come as a Poisson process of its
// rate, drawn up front so that the schedule does not depend on what the
// cluster does.
func (w *world) scheduleFaults(until time.Duration) {
	f := w.cfg.Faults
	kinds := []struct {
		rate float64
		fire func()
	}{
		{f.Partition, w.partitionFault},
		{f.Crash, w.crashFault},
		{f.Pause, w.pauseFault},
		{f.Suspicion, w.suspicionFault},
	}
	for _, k := range kinds {
		if k.rate <= 0 {
			continue
		}
		mean := float64(time.Second) / k.rate
		t := time.Duration(0)
		for {
			t += time.Duration(w.e.rng.ExpFloat64() * mean)
			if t >= until {
				break
			}
			w.e.at(t, k.fire)
		}
	}
}

// partitionFault cuts a random non-empty set of nodes (the journal's
// among the candidates) from the rest, both ways or one way, and heals
// it after a while.
func (w *world) partitionFault() {
	var a, b []int
	for _, n := range w.nodes {
		if w.e.chance(0.3) {
			a = append(a, n.idx)
		} else {
			b = append(b, n.idx)
		}
	}
	if len(a) == 0 || len(b) == 0 {
		return
	}
	oneWay := w.e.chance(w.cfg.Faults.OneWay)
	if oneWay {
		w.faults[faultOneWay]++
	} else {
		w.faults[faultPartition]++
	}
	w.net.partition(a, b, oneWay)
	w.e.tracef("sim", "fault partition %v | %v one_way=%v", w.names(a), w.names(b), oneWay)
	w.e.after(w.e.between(100*time.Millisecond, 1500*time.Millisecond), func() {
		w.net.heal()
		w.e.tracef("sim", "heal partitions")
	})
}

// crashFault crashes a random process node (never the journal's) and
// restarts it after a while; its unsynced journal writes are lost.
func (w *world) crashFault() {
	n := w.procs[w.e.intn(len(w.procs))]
	if !n.up {
		return
	}
	w.faults[faultCrash]++
	w.crash(n)
	w.e.after(w.e.between(50*time.Millisecond, time.Second), func() { w.restart(n) })
}

// pauseFault stops a random process node for a while (a GC pause, a
// SIGSTOP): it runs nothing, its clock goes on.
func (w *world) pauseFault() {
	n := w.procs[w.e.intn(len(w.procs))]
	if !n.up || n.pausedUntil > w.e.now {
		return
	}
	w.faults[faultPause]++
	d := w.e.between(10*time.Millisecond, 1500*time.Millisecond)
	n.pausedUntil = w.e.now + d
	w.e.tracef(n.name, "fault pause for %v", d)
	w.paused(n, d)
}

// suspicionFault makes one node's membership view mark a live node down
// for a while.
func (w *world) suspicionFault() {
	o := w.procs[w.e.intn(len(w.procs))]
	x := w.procs[w.e.intn(len(w.procs))]
	if o == x || !x.up || !w.view.sees(o, x) {
		return
	}
	w.faults[faultSuspicion]++
	w.e.tracef(o.name, "fault suspects %s", x.name)
	w.view.suspect(o, x, w.e.between(50*time.Millisecond, 800*time.Millisecond))
}

func (w *world) names(idx []int) []string {
	s := make([]string, len(idx))
	for i, x := range idx {
		s[i] = w.nodes[x].name
	}
	return s
}
