package pulling

import (
	"maps"
	"slices"
)

// Position is how far a durable master's Epic has got: the longest prefix
// of items that all finished (items are numbered from 1 by their place in
// the Epic), the Epic's cursor after the last of them, and the items
// finished beyond the prefix, with the cursor after each.
//
// A new activation seeks the Epic to the prefix's cursor and skips the
// items finished beyond it, so after a crash only the items that were held
// unconfirmed come round again. Workers finish items out of order, so the
// items beyond the prefix are at most about the items in flight.
//
// Position is a pure value type: no I/O, not safe for concurrent use. The
// zero Position is the start of an Epic.
type Position struct {
	prefix       uint64
	prefixCursor []byte
	beyond       map[uint64][]byte // finished items > prefix+1 (never prefix+1: that extends the prefix)
}

// Prefix returns the number of items in the longest finished prefix and the
// Epic's cursor after its last item (nil when the prefix is empty).
func (p *Position) Prefix() (n uint64, cursor []byte) { return p.prefix, p.prefixCursor }

// Finished reports whether item seq has finished.
func (p *Position) Finished(seq uint64) bool {
	if seq <= p.prefix {
		return true
	}
	_, ok := p.beyond[seq]
	return ok
}

// Count returns how many items have finished.
func (p *Position) Count() uint64 { return p.prefix + uint64(len(p.beyond)) }

// Beyond returns the item numbers finished beyond the prefix, in order.
func (p *Position) Beyond() []uint64 { return slices.Sorted(maps.Keys(p.beyond)) }

// Finish records that item seq (>= 1) finished, with the Epic's cursor after
// it, and reports whether that is news (false for seq 0 or an item already
// finished).
func (p *Position) Finish(seq uint64, cursor []byte) bool {
	if seq == 0 || p.Finished(seq) {
		return false
	}
	if seq != p.prefix+1 {
		if p.beyond == nil {
			p.beyond = make(map[uint64][]byte)
		}
		p.beyond[seq] = cursor
		return true
	}
	p.prefix, p.prefixCursor = seq, cursor
	for {
		c, ok := p.beyond[p.prefix+1]
		if !ok {
			return true
		}
		delete(p.beyond, p.prefix+1)
		p.prefix++
		p.prefixCursor = c
	}
}

// Items returns the finished items beyond the prefix with their cursors, in
// order (for a snapshot).
func (p *Position) Items() []ItemPosition {
	out := make([]ItemPosition, 0, len(p.beyond))
	for _, seq := range p.Beyond() {
		out = append(out, ItemPosition{Seq: seq, Cursor: p.beyond[seq]})
	}
	return out
}

// RestorePosition returns the Position with the given prefix (and the
// cursor after it) and the items finished beyond it; items at or below the
// prefix are ignored.
func RestorePosition(prefix uint64, cursor []byte, beyond []ItemPosition) Position {
	p := Position{prefix: prefix, prefixCursor: cursor}
	for _, it := range beyond {
		p.Finish(it.Seq, it.Cursor)
	}
	return p
}

// ItemPosition is one item of an Epic by its place (from 1) with the Epic's
// cursor after it.
type ItemPosition struct {
	Seq    uint64
	Cursor []byte
}
