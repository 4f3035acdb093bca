package master

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/messages"
)

// The packed snapshot encoding: MasterSnapshot.chunks.
//
// A snapshot of a million works as WorkEntry messages took seconds to build
// and to decode (a message per entry, per work and per history event, each
// allocated and then dropped), and its transient copy weighed as much as the
// state. The packed encoding writes each entry straight from the state into
// a chunk of bytes and reads it straight back into an entry: no message per
// entry on either side.
//
// A chunk is a format byte (packedFormat) followed by entries, each:
//
//	uvarint flags (flagWaiter)
//	uvarint status
//	string work_id, string job_type, bytes payload
//	varint work.attempt, varint work.deadline_unix_nano
//	[flagWaiter: string address, string id, uvarint request_id]
//	varint attempts, string last_error, bytes result
//	varint ready_at, varint order, string worker_id
//	varint started_at, varint finished_at
//	uvarint history length, then per event:
//	  uvarint kind, varint at, varint attempt, string worker, string error
//
// where string and bytes are a uvarint length and the bytes. Empty bytes
// decode as nil, as they do from protobuf.

const (
	// packedFormat is the first byte of every chunk; a reader rejects
	// another (a newer master's snapshot) rather than misread it.
	packedFormat = 1
	// chunkEntries is how many entries a chunk holds at most.
	chunkEntries = 4096

	flagWaiter = 1
)

// errPacked is the cause of every malformed chunk.
var errPacked = errors.New("malformed packed entry")

// packer appends entries to chunks.
type packer struct {
	chunks [][]byte
	cur    []byte
	n      int // entries in cur
	total  int64
}

func (p *packer) add(e *entry) {
	if p.cur == nil {
		p.cur = append(make([]byte, 0, 64*chunkEntries), packedFormat)
	}
	p.cur = appendEntry(p.cur, e)
	p.n++
	p.total++
	if p.n == chunkEntries {
		p.chunks = append(p.chunks, p.cur)
		p.cur, p.n = nil, 0
	}
}

func (p *packer) done() [][]byte {
	if p.cur != nil {
		p.chunks = append(p.chunks, p.cur)
		p.cur, p.n = nil, 0
	}
	return p.chunks
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendEntry(b []byte, e *entry) []byte {
	w := e.work
	var flags uint64
	if w.GetWaiter() != nil {
		flags |= flagWaiter
	}
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendUvarint(b, uint64(e.status))
	b = appendString(b, w.GetWorkId())
	b = appendString(b, w.GetJobType())
	b = appendBytes(b, w.GetPayload())
	b = binary.AppendVarint(b, int64(w.GetAttempt()))
	b = binary.AppendVarint(b, w.GetDeadlineUnixNano())
	if flags&flagWaiter != 0 {
		b = appendString(b, w.GetWaiter().GetAddress())
		b = appendString(b, w.GetWaiter().GetId())
		b = binary.AppendUvarint(b, uint64(w.GetWaiter().GetRequestId()))
	}
	b = binary.AppendVarint(b, int64(e.attempts))
	b = appendString(b, e.lastError)
	b = appendBytes(b, e.result)
	b = binary.AppendVarint(b, e.readyAt)
	b = binary.AppendVarint(b, e.order)
	b = appendString(b, e.workerID)
	b = binary.AppendVarint(b, e.startedAt)
	b = binary.AppendVarint(b, e.finishedAt)
	b = binary.AppendUvarint(b, uint64(len(e.history)))
	for _, h := range e.history {
		b = binary.AppendUvarint(b, uint64(h.kind))
		b = binary.AppendVarint(b, h.at)
		b = binary.AppendVarint(b, int64(h.attempt))
		b = appendString(b, h.worker)
		b = appendString(b, h.err)
	}
	return b
}

// unpacker reads entries from one chunk. The first error sticks: every
// later read returns a zero value.
type unpacker struct {
	b      []byte
	err    error
	intern map[string]string // job types and worker ids, shared by all entries
}

func (u *unpacker) fail() {
	if u.err == nil {
		u.err = errPacked
	}
	u.b = nil
}

func (u *unpacker) uvarint() uint64 {
	v, n := binary.Uvarint(u.b)
	if n <= 0 {
		u.fail()
		return 0
	}
	u.b = u.b[n:]
	return v
}

func (u *unpacker) varint() int64 {
	v, n := binary.Varint(u.b)
	if n <= 0 {
		u.fail()
		return 0
	}
	u.b = u.b[n:]
	return v
}

func (u *unpacker) raw() []byte {
	n := u.uvarint()
	if n > uint64(len(u.b)) {
		u.fail()
		return nil
	}
	v := u.b[:n:n]
	u.b = u.b[n:]
	return v
}

func (u *unpacker) string() string { return string(u.raw()) }

// bytes returns a copy (nil when empty), so the state never holds on to
// the chunk.
func (u *unpacker) bytes() []byte {
	v := u.raw()
	if len(v) == 0 {
		return nil
	}
	return append([]byte(nil), v...)
}

// shared returns the string read, one copy per distinct value (job types
// and worker ids repeat across a million entries).
func (u *unpacker) shared() string {
	v := u.raw()
	if len(v) == 0 {
		return ""
	}
	if s, ok := u.intern[string(v)]; ok {
		return s
	}
	s := string(v)
	u.intern[s] = s
	return s
}

func (u *unpacker) entry() *entry {
	flags := u.uvarint()
	status := messages.WorkStatus(u.uvarint())
	w := &messages.Work{WorkId: u.string(), JobType: u.shared(), Payload: u.bytes()}
	w.Attempt = int32(u.varint())
	w.DeadlineUnixNano = u.varint()
	if flags&flagWaiter != 0 {
		w.Waiter = &actor.PID{Address: u.shared(), Id: u.string(), RequestId: uint32(u.uvarint())}
	}
	e := &entry{work: w, status: status, heapIdx: -1}
	e.attempts = int32(u.varint())
	e.lastError = u.string()
	e.result = u.bytes()
	e.readyAt = u.varint()
	e.order = u.varint()
	e.workerID = u.shared()
	e.startedAt = u.varint()
	e.finishedAt = u.varint()
	if n := u.uvarint(); n > 0 && u.err == nil {
		if n > uint64(len(u.b)) { // each event takes at least a byte
			u.fail()
			return nil
		}
		h := make([]histEvent, 0, min(n, historyCap))
		for range n {
			ev := histEvent{kind: messages.WorkHistoryKind(u.uvarint()), at: u.varint()}
			ev.attempt = int32(u.varint())
			ev.worker = u.shared()
			ev.err = u.string()
			h = appendHistory(h, ev)
		}
		e.history = h
	}
	if u.err != nil {
		return nil
	}
	return e
}

// restoreChunks adds the entries of packed chunks to s.
func (s *WorkState) restoreChunks(chunks [][]byte) error {
	u := unpacker{intern: make(map[string]string)}
	i := 0
	for c, chunk := range chunks {
		if len(chunk) == 0 || chunk[0] != packedFormat {
			return fmt.Errorf("%w: chunk %d is not in packed format %d (written by a newer master?)", ErrBadSnapshot, c, packedFormat)
		}
		u.b = chunk[1:]
		for len(u.b) > 0 {
			e := u.entry()
			if e == nil {
				return fmt.Errorf("%w: chunk %d entry %d: %w", ErrBadSnapshot, c, i, u.err)
			}
			if err := s.restoreEntry(i, e); err != nil {
				return err
			}
			i++
		}
	}
	return nil
}
