package sim

// OneServerAtATime checks that at no instant do two activations of one stream both
// hand out work or answer status. Checked against the journal's leases:
// an activation may serve only while the journal (on its own clock) has
// granted it the stream's lease, and the journal grants it to one holder
// at a time, so two serving at once is impossible unless one serves
// outside its lease.
type OneServerAtATime struct{}

// Name identifies the invariant.
func (OneServerAtATime) Name() string { return "one_server_at_a_time" }

func (i OneServerAtATime) serve(h *history, s *stream, holder, what string) {
	if !s.leaseCovers(holder, h.w.e.now) {
		var cur leaseGrant
		if n := len(s.grants); n > 0 {
			cur = s.grants[n-1]
		}
		h.violate(i, "", s.name, "%s served (%s) outside its lease; the journal's last grant: %s [%v, %v)",
			holder, what, cur.holder, cur.from, cur.until)
	}
}
