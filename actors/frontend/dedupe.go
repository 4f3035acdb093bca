package frontend

import "hash/maphash"

// seenSet remembers the last n ids added (FIFO eviction): pure, no actors.
//
// It is an open-addressing table of its own rather than a Go map: every add
// of a consumer that keeps up evicts the oldest id, and a map of 65,536
// strings under that churn cost about 0.7 µs an add in a busy frontend (13%
// of its CPU under batch load), mostly cache misses on the strings of other
// ids. Here a probe compares 64-bit hashes kept in the table; a string is
// read only when its hash matches, and deletion shifts the probe run back
// instead of leaving tombstones.
type seenSet struct {
	ring  []seenID // insertion order; ring[next] is the oldest once full
	next  int
	slots []seenSlot // len is a power of two, at least twice the window
	mask  uint64
	seed  maphash.Seed
}

type seenID struct {
	id   string
	hash uint64
}

// seenSlot is a table entry: the hash of the id and its index in ring plus
// one (0: empty).
type seenSlot struct {
	hash uint64
	ref  int32
}

func newSeenSet(n int) *seenSet {
	size := 2
	for size < 2*n {
		size *= 2
	}
	return &seenSet{ring: make([]seenID, 0, n), slots: make([]seenSlot, size), mask: uint64(size - 1), seed: maphash.MakeSeed()}
}

// add records id and reports whether it was new (not among the last n).
func (s *seenSet) add(id string) bool {
	h := maphash.String(s.seed, id)
	i := h & s.mask
	for ; s.slots[i].ref != 0; i = (i + 1) & s.mask {
		if sl := s.slots[i]; sl.hash == h && s.ring[sl.ref-1].id == id {
			return false
		}
	}
	ref := len(s.ring)
	if len(s.ring) < cap(s.ring) {
		s.ring = append(s.ring, seenID{id: id, hash: h})
	} else {
		ref = s.next
		s.remove(ref)
		s.ring[ref] = seenID{id: id, hash: h}
		s.next = (s.next + 1) % len(s.ring)
		// The removal may have shifted the probe run that ended at i.
		i = s.freeSlot(h)
	}
	s.slots[i] = seenSlot{hash: h, ref: int32(ref + 1)}
	return true
}

// freeSlot returns the first empty slot of the probe run from h's home.
func (s *seenSet) freeSlot(h uint64) uint64 {
	i := h & s.mask
	for s.slots[i].ref != 0 {
		i = (i + 1) & s.mask
	}
	return i
}

// remove takes ring entry ref out of the table, moving back the entries
// after it in its probe run that may no longer be found past the gap.
func (s *seenSet) remove(ref int) {
	i := s.ring[ref].hash & s.mask
	for s.slots[i].ref != int32(ref+1) {
		i = (i + 1) & s.mask
	}
	for j := i; ; {
		j = (j + 1) & s.mask
		if s.slots[j].ref == 0 {
			break
		}
		// The entry at j stays unless its home slot k lies cyclically
		// outside (i, j]: then the gap at i is on its probe path.
		k := s.slots[j].hash & s.mask
		if i <= j && i < k && k <= j || i > j && (i < k || k <= j) {
			continue
		}
		s.slots[i] = s.slots[j]
		i = j
	}
	s.slots[i] = seenSlot{}
}

// len returns how many ids the set remembers.
func (s *seenSet) len() int { return len(s.ring) }
