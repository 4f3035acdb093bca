package core

import (
	"fmt"
	"hash/maphash"

	"github.com/foreman-actors/foreman/messages"
)

// Bug is a known bug that a test can plant back into this core.
//
// test-only: reintroduces a known bug so that the simulator's tests can
// prove they catch it; never set in production.
type Bug uint8

const (
	// NoBug is the zero value: the core as it should be.
	NoBug Bug = iota
	// DedupeByIDOnly makes the result consumer's Dedupe remember work ids
	// alone, not outcomes (issue 34 item 2): a work that died, was
	// re-submitted and ended again is taken for a duplicate of its first
	// end, and the re-run's outcome never reaches the consumer.
	DedupeByIDOnly
)

// String returns the bug's name.
func (b Bug) String() string {
	switch b {
	case NoBug:
		return "none"
	case DedupeByIDOnly:
		return "dedupe_by_id_only"
	}
	return fmt.Sprintf("Bug(%d)", uint8(b))
}

// OutcomeTag tells apart the outcomes of one work id: its final status and
// the journal sequence of its finishing event in the result feed (seq; 0
// for a result from pub-sub, which has none). A work that died or was
// cancelled may be re-submitted and end again, even with the same status,
// and a forgotten done id may be submitted and done again: each end has
// its own sequence. The same end read again (the feed resumed from an older
// cursor, pub-sub delivering twice) has the same tag. Pub-sub carries only
// completions, whose status is UNKNOWN, meaning DONE.
func OutcomeTag(status messages.WorkStatus, seq int64) uint64 {
	if status == messages.WorkStatus_WORK_STATUS_UNKNOWN {
		status = messages.WorkStatus_WORK_STATUS_DONE
	}
	return uint64(seq)<<8 | uint64(status)&0xff
}

// Dedupe remembers the last n outcomes added (FIFO eviction): the result
// consumer's deduplication (by work id, final status and feed sequence;
// see OutcomeTag). Not safe for concurrent use.
//
// It is an open-addressing table of its own rather than a Go map: every add
// of a consumer that keeps up evicts the oldest id, and a map of 65,536
// strings under that churn cost about 0.7 µs an add in a busy frontend (13%
// of its CPU under batch load), mostly cache misses on the strings of other
// ids. Here a probe compares 64-bit hashes kept in the table; a string is
// read only when its hash matches, and deletion shifts the probe run back
// instead of leaving tombstones. The hash's seed is random (maphash), which
// changes where entries sit in the table but never an answer: Add's result
// depends only on the outcomes added, so a simulator's run stays the same
// for one seed.
type Dedupe struct {
	ring  []seenID // insertion order; ring[next] is the oldest once full
	next  int
	slots []seenSlot // len is a power of two, at least twice the window
	mask  uint64
	seed  maphash.Seed
	bug   Bug
}

type seenID struct {
	id   string
	tag  uint64
	hash uint64
}

// seenSlot is a table entry: the hash of the id and its index in ring plus
// one (0: empty).
type seenSlot struct {
	hash uint64
	ref  int32
}

// NewDedupe returns a Dedupe of the last n outcomes (n >= 1); planted is
// test-only (see Bug): NoBug in production.
func NewDedupe(n int, planted Bug) *Dedupe {
	n = max(n, 1)
	size := 2
	for size < 2*n {
		size *= 2
	}
	return &Dedupe{ring: make([]seenID, 0, n), slots: make([]seenSlot, size), mask: uint64(size - 1), seed: maphash.MakeSeed(), bug: planted}
}

// Add records the outcome (id, tag) and reports whether it was new (not
// among the last n).
func (s *Dedupe) Add(id string, tag uint64) bool {
	if s.bug == DedupeByIDOnly {
		tag = 0
	}
	h := maphash.String(s.seed, id) ^ mix64(tag)
	i := h & s.mask
	for ; s.slots[i].ref != 0; i = (i + 1) & s.mask {
		if sl := s.slots[i]; sl.hash == h {
			if r := &s.ring[sl.ref-1]; r.tag == tag && r.id == id {
				return false
			}
		}
	}
	ref := len(s.ring)
	if len(s.ring) < cap(s.ring) {
		s.ring = append(s.ring, seenID{id: id, tag: tag, hash: h})
	} else {
		ref = s.next
		s.remove(ref)
		s.ring[ref] = seenID{id: id, tag: tag, hash: h}
		s.next = (s.next + 1) % len(s.ring)
		// The removal may have shifted the probe run that ended at i.
		i = s.freeSlot(h)
	}
	s.slots[i] = seenSlot{hash: h, ref: int32(ref + 1)}
	return true
}

// AddResult records a result's outcome: r's work id and status, seq the
// position of its finishing event in the result feed (0: not from the
// feed).
func (s *Dedupe) AddResult(r *messages.WorkResult, seq int64) bool {
	return s.Add(r.GetWorkId(), OutcomeTag(r.GetStatus(), seq))
}

// freeSlot returns the first empty slot of the probe run from h's home.
func (s *Dedupe) freeSlot(h uint64) uint64 {
	i := h & s.mask
	for s.slots[i].ref != 0 {
		i = (i + 1) & s.mask
	}
	return i
}

// remove takes ring entry ref out of the table, moving back the entries
// after it in its probe run that may no longer be found past the gap.
func (s *Dedupe) remove(ref int) {
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

// mix64 spreads the bits of a tag over the whole word (splitmix64's
// finaliser), so that outcomes of one id differing only in their feed
// sequence land in different home slots.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Len returns how many outcomes the set remembers.
func (s *Dedupe) Len() int { return len(s.ring) }
