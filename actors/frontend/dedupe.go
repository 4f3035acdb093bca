package frontend

// seenSet remembers the last n ids added (FIFO eviction): pure, no actors.
type seenSet struct {
	ids  map[string]struct{}
	ring []string // insertion order; ring[next] is the oldest once full
	next int
}

func newSeenSet(n int) *seenSet {
	return &seenSet{ids: make(map[string]struct{}, n), ring: make([]string, 0, n)}
}

// add records id and reports whether it was new (not among the last n).
func (s *seenSet) add(id string) bool {
	if _, ok := s.ids[id]; ok {
		return false
	}
	if len(s.ring) < cap(s.ring) {
		s.ring = append(s.ring, id)
	} else {
		delete(s.ids, s.ring[s.next])
		s.ring[s.next] = id
		s.next = (s.next + 1) % len(s.ring)
	}
	s.ids[id] = struct{}{}
	return true
}
