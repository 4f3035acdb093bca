package sim

// OneServerAtATime checks that at no instant do two activations of one
// stream both hand out work or answer status (a status or a page of the
// result feed). Checked against the journal's leases: an activation may
// serve only while the journal (on its own clock) has granted it the
// stream's lease, and the journal grants it to one holder at a time, so two
// serving at once is impossible unless one serves outside its lease. Nor may
// an activation serve once another has taken the stream's epoch after it:
// that one recovered under the lease in between, so what the first serves is
// stale (a renewal answered after the deadline must not continue a lease).
// An answer counts at the instant the master decides it: one held until an
// earlier append is durable leaves later, as one slow in the network
// arrives later, and shows what was true when it was decided.
//
// And an activation takes the stream's epoch (which fences the one
// serving) only while it holds the lease: an epoch taken without it fences
// the lease's rightful holder, the churn the lease exists to prevent.
type OneServerAtATime struct{}

func (i OneServerAtATime) epoch(h *history, s *stream, holder string) {
	if cur := s.js.LeaseHolder(journalNow(h.w.e.now)); cur != holder {
		h.violate(i, "", s.name, "%s took epoch %d without the lease (the journal's holder: %q)", holder, s.js.Epoch()+1, cur)
	}
}

// Name identifies the invariant.
func (OneServerAtATime) Name() string { return "one_server_at_a_time" }

func (i OneServerAtATime) serve(h *history, s *stream, holder string, epoch int64, what string) {
	if cur := s.js.Epoch(); cur != epoch {
		h.violate(i, "", s.name, "%s served (%s) from epoch %d, after another activation recovered under epoch %d (and so held the lease since)",
			holder, what, epoch, cur)
		return
	}
	if !s.leaseCovers(holder, h.w.e.now) {
		var cur leaseGrant
		if n := len(s.grants); n > 0 {
			cur = s.grants[n-1]
		}
		h.violate(i, "", s.name, "%s served (%s) outside its lease; the journal's last grant: %s [%v, %v)",
			holder, what, cur.holder, cur.from, cur.until)
	}
}
