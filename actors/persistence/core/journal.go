package core

import (
	"fmt"
	"time"
)

// LeaseState is a stream's lease as Stream.Lease found or left it (the
// journal port's persistence.LeaseState, which this package cannot import).
type LeaseState struct {
	// Holder is the caller when the lease was granted, the other holder
	// when it was refused.
	Holder string
	// Remaining is how long the lease stays live from the call, on the
	// journal's clock: the ttl asked for when granted, the other holder's
	// time left when refused.
	Remaining time.Duration
}

// Grantable reports whether holder may take a lease whose stored holder is
// cur and which runs until expires (exists false: no lease stored) at now,
// on the journal's clock: the lease is free, has lapsed, or is holder's
// already (a renewal). A lease is live while now is before expires. It is
// the rule of cluster/journal's backends (Memory and SQLite decide it in Go,
// PostgreSQL in SQL on the server's clock).
func Grantable(exists bool, cur string, expires, now time.Time, holder string) bool {
	return !exists || cur == holder || !now.Before(expires)
}

// Write is the outcome of a write the journal decided.
type Write int

const (
	// WriteOK means stored.
	WriteOK Write = iota
	// WriteFenced means the writer's epoch is no longer the stream's.
	WriteFenced
	// WriteConflict means the first sequence number does not follow the last
	// stored one.
	WriteConflict
)

// String returns the outcome's name.
func (w Write) String() string {
	switch w {
	case WriteOK:
		return "ok"
	case WriteFenced:
		return "fenced"
	case WriteConflict:
		return "conflict"
	}
	return fmt.Sprintf("Write(%d)", int(w))
}

// Stream is the journal's side of one stream as the real backends implement
// it (cluster/journal: Memory, SQLite, PostgreSQL), for a simulator's
// journal model: epochs that fence older writers, contiguous sequence
// numbers, and the lease decided on the journal's clock when the call
// reaches it. It stores no events, only their count: a model keeps what it
// needs of them itself. The zero value is an empty stream with no lease.
type Stream struct {
	epoch   int64
	lastSeq int64

	leased  bool
	holder  string
	expires time.Time
}

// Epoch returns the stream's current epoch (0 before the first
// AcquireEpoch).
func (s *Stream) Epoch() int64 { return s.epoch }

// LastSeq returns the sequence number of the last stored event.
func (s *Stream) LastSeq() int64 { return s.lastSeq }

// AcquireEpoch makes the caller the stream's only writer: a new epoch,
// greater than any earlier one, and the last stored sequence number.
// Writes with an older epoch are fenced from then on.
func (s *Stream) AcquireEpoch() (epoch, lastSeq int64) {
	s.epoch++
	return s.epoch, s.lastSeq
}

// Append stores n events numbered from first under epoch, or refuses them:
// fenced when epoch is not the stream's, a conflict when first does not
// follow the last stored event. n == 0 is checked for the epoch only.
func (s *Stream) Append(epoch, first int64, n int) Write {
	if epoch != s.epoch {
		return WriteFenced
	}
	if n == 0 {
		return WriteOK
	}
	if first != s.lastSeq+1 {
		return WriteConflict
	}
	s.lastSeq += int64(n)
	return WriteOK
}

// CheckEpoch is the fence of a snapshot or a deletion: WriteOK when epoch
// is the stream's, WriteFenced otherwise.
func (s *Stream) CheckEpoch(epoch int64) Write {
	if epoch != s.epoch {
		return WriteFenced
	}
	return WriteOK
}

// Lease makes holder the lease holder for ttl from now, on the journal's
// clock, when Grantable, and reports true; otherwise it changes nothing and
// returns the other holder's state. Like the backends it does not check the
// epoch: the lease is advisory, and the epoch stays the fence.
func (s *Stream) Lease(now time.Time, holder string, ttl time.Duration) (LeaseState, bool) {
	if !Grantable(s.leased, s.holder, s.expires, now, holder) {
		return LeaseState{Holder: s.holder, Remaining: s.expires.Sub(now)}, false
	}
	s.leased, s.holder, s.expires = true, holder, now.Add(ttl)
	return LeaseState{Holder: holder, Remaining: ttl}, true
}

// ReleaseLease ends holder's lease at once; nothing when holder does not
// hold it.
func (s *Stream) ReleaseLease(holder string) {
	if s.leased && s.holder == holder {
		s.leased, s.holder, s.expires = false, "", time.Time{}
	}
}

// LeaseHolder returns who holds the lease live at now, on the journal's
// clock ("" when nobody does): what an invariant checker asks.
func (s *Stream) LeaseHolder(now time.Time) string {
	if s.leased && now.Before(s.expires) {
		return s.holder
	}
	return ""
}
