package sim

// hostFactory makes the host of a process node.
type hostFactory func(w *world, n *node) host

// build puts a host on every process node and starts them.
func (w *world) build() {
	mk := w.makeHost
	if mk == nil {
		mk = clusterHost
	}
	for _, n := range w.procs {
		w.hosts[n.idx] = mk(w, n)
	}
	for _, n := range w.procs {
		w.hosts[n.idx].start()
	}
}

// clusterHost is the real cluster's host of n's kind.
func clusterHost(w *world, n *node) host {
	switch n.kind {
	case kindBackend:
		if w.sched != nil {
			return newSchedBackend(w, n) // schedule.go
		}
		return newBackend(w, n)
	case kindFrontend:
		return newFrontend(w, n)
	default:
		return newWorker(w, n)
	}
}
