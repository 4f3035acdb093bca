package membership

// SetStartedHook sets a function that start calls right after the cluster
// has started remoting and the membership endpoint listens (tests use it
// to serialise remote starts of several members in one process).
func SetStartedHook(p *Provider, f func()) { p.startedHook = f }

// SetFailServing makes the member's endpoint answer 500 (a member that is
// alive but cannot be probed: frozen, overloaded, partitioned).
func SetFailServing(p *Provider, fail bool) { p.failServing.Store(fail) }

// SetHangServing makes p's endpoint answer nothing while hang is set, as a
// paused or cut-off node: probes of it time out.
func SetHangServing(p *Provider, hang bool) {
	if hang {
		ch := make(chan struct{})
		p.hang.Store(&ch)
		return
	}
	if ch := p.hang.Swap(nil); ch != nil {
		close(*ch)
	}
}
