package core

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/messages"
)

// The packed snapshot encoding: MasterSnapshot.chunks.
//
// A snapshot of a million works as WorkEntry messages took seconds to build
// and to decode (a message per entry, per work and per history event, each
// allocated and then dropped), and its transient copy weighed as much as the
// state. The packed encoding writes each entry straight from the state into
// a chunk of bytes, and reads a chunk back with a handful of allocations:
// one array of entries, one of history events, one string of
// all work ids and one array of all payloads. An entry thus shares its
// chunk's arrays with its neighbours, and they stay allocated until the
// last of them is forgotten: never more memory than the restored chunk
// took, and much less time and garbage collection than a million small
// objects.
//
// A chunk is a header, then entries. The header:
//
//	byte format (packedFormat, or packedFormatV2 when no entry of the chunk
//	     needs format 3; packedFormatV1 and packedFormatV2 are still read)
//	uvarint entries, uvarint id bytes, uvarint payload bytes, uvarint history events
//
// Each entry:
//
//	uvarint flags (flagWaiter, flagPlain, flagWaiters, flagExtra)
//	uvarint status
//	string work_id, string job_type, bytes payload
//	varint work.attempt, varint work.deadline_unix_nano
//	[flagWaiter: string address, string id, uvarint request_id]
//	[flagWaiters: uvarint count, then per waiter: string address, string id, uvarint request_id]
//	[flagExtra: bytes extra (the Work's other fields, see entryCold.extra)]
//	varint attempts, string last_error, bytes result
//	varint ready_at, varint order, string worker_id
//	varint started_at, varint finished_at
//	uvarint history length, then per event:
//	  uvarint kind, varint at, varint attempt, string worker, string error
//
// where string and bytes are a uvarint length and the bytes. Empty bytes
// decode as nil, as they do from protobuf. The header's totals must match
// the entries exactly.
//
// flagPlain (format 2) marks an entry whose history its fields imply
// (entry.plain): its history length is 0, and ready_at, started_at and
// worker_id hold the values it is made of. Format 1 wrote such an entry's
// history in full (three events for a done work, each with the worker id:
// more than half of a drained million's snapshot) and ready_at, started_at
// and worker_id as the state shows them (zero when done).
//
// flagWaiters and flagExtra (format 3) carry further callers' waiters
// (WaiterAdded) and the fields of a Work that the entry does not keep inline
// (a field added to work.proto, or one sent by a newer frontend). A chunk
// none of whose entries has them is written in format 2, which a master
// from before format 3 reads too.

const (
	// packedFormat is the first byte of a chunk that needs it (see
	// packedFormatV2); a reader rejects a format it does not know (a newer
	// master's snapshot) rather than misread it, so a master from before
	// format 3 stops at recovery on such a chunk.
	packedFormat = 3
	// packedFormatV2 is the format before flagWaiters and flagExtra, still
	// written for a chunk that has neither, and read.
	packedFormatV2 = 2
	// packedFormatV1 is the format before flagPlain, still read.
	packedFormatV1 = 1
	// chunkEntries is how many entries a chunk holds at most.
	chunkEntries = 4096

	flagWaiter  = 1
	flagPlain   = 2
	flagWaiters = 4 // format 3
	flagExtra   = 8 // format 3
)

// errPacked is the cause of every malformed chunk.
var errPacked = errors.New("malformed packed entry")

// packer appends entries to chunks: to a list of chunks (chunks), or, when
// wire is set, straight into the wire form of a PackedMasterSnapshot (out,
// see PackedWire).
type packer struct {
	chunks [][]byte
	wire   bool
	out    []byte
	body   []byte // entries of the open chunk
	// totals of the open chunk, for its header
	n, idBytes, payloadBytes, hist int
	total                          int64
	v3                             bool // an entry of the open chunk needs format 3
	// size counts the bytes of finished and other entries (SnapshotSize).
	size SnapshotSize
}

// SnapshotSize is what a snapshot's entries weighed, finished works apart
// from the others (a done work with its result packs into more than a
// pending one): the next snapshot's buffer is sized from it (predict).
type SnapshotSize struct {
	finishedBytes, finished, otherBytes, others int
}

// Bytes per entry that predict assumes before a snapshot has shown them:
// a pending work with a short id and payload packs into about 45 bytes, a
// done plain one with a short result into about 75.
const (
	defaultOtherEntryBytes    = 64
	defaultFinishedEntryBytes = 96
)

// predict returns the bytes a snapshot of finished and others works will
// likely take, a sixteenth over: the buffer is then rarely regrown (each
// regrowth copies the bytes so far and leaves the old ones as garbage), and
// capacity never written costs no resident memory.
func (z SnapshotSize) predict(finished, others int) int {
	per := func(bytes, n, def int) float64 {
		if n == 0 {
			return float64(def)
		}
		return float64(bytes) / float64(n)
	}
	b := per(z.finishedBytes, z.finished, defaultFinishedEntryBytes)*float64(finished) +
		per(z.otherBytes, z.others, defaultOtherEntryBytes)*float64(others)
	return int(b*17/16) + 4096
}

func (p *packer) add(e *entry) {
	if p.body == nil {
		p.body = make([]byte, 0, 64*chunkEntries)
	}
	before := len(p.body)
	p.body = appendEntry(p.body, e)
	if e.rareFields() != nil {
		p.v3 = true
	}
	if e.finished() {
		p.size.finishedBytes += len(p.body) - before
		p.size.finished++
	} else {
		p.size.otherBytes += len(p.body) - before
		p.size.others++
	}
	p.n++
	p.idBytes += len(e.id)
	p.payloadBytes += len(e.payload())
	p.hist += len(e.history()) // none when plain
	p.total++
	if p.n == chunkEntries {
		p.close()
	}
}

// close ends the open chunk: header, then its entries.
func (p *packer) close() {
	if p.body == nil {
		return
	}
	var h [1 + 4*binary.MaxVarintLen64]byte
	format := byte(packedFormatV2)
	if p.v3 {
		format = packedFormat
	}
	hdr := append(h[:0], format)
	for _, v := range []int{p.n, p.idBytes, p.payloadBytes, p.hist} {
		hdr = binary.AppendUvarint(hdr, uint64(v))
	}
	if p.wire {
		// MasterSnapshot.chunks, one occurrence of the repeated field.
		p.out = protowire.AppendTag(p.out, fieldChunks, protowire.BytesType)
		p.out = protowire.AppendVarint(p.out, uint64(len(hdr)+len(p.body)))
		p.out = append(append(p.out, hdr...), p.body...)
	} else {
		c := make([]byte, 0, len(hdr)+len(p.body))
		p.chunks = append(p.chunks, append(append(c, hdr...), p.body...))
	}
	p.body = p.body[:0]
	p.n, p.idBytes, p.payloadBytes, p.hist, p.v3 = 0, 0, 0, 0, false
}

func (p *packer) done() [][]byte {
	if p.n > 0 {
		p.close()
	}
	return p.chunks
}

// Field numbers of the wire form PackedWire writes (messages/master.proto);
// TestPackedWireIsTheMarshalledSnapshot checks it against proto.Marshal.
const (
	fieldPackedSnapshot = 1  // PackedMasterSnapshot.snapshot
	fieldNextOrder      = 2  // MasterSnapshot.next_order
	fieldAcceptedTotal  = 3  // MasterSnapshot.accepted_total
	fieldChunks         = 4  // MasterSnapshot.chunks
	fieldChunkEntries   = 5  // MasterSnapshot.chunk_entries
	fieldKeys           = 15 // MasterSnapshot.keys
	fieldPausedJobTypes = 21 // MasterSnapshot.paused_job_types
)

// PackedWire returns the wire form of the PackedMasterSnapshot of s (the
// bytes proto.Marshal makes of it, fields in number order), appending each
// chunk straight into it: no list of chunks, and no marshalled copy of them,
// lives beside the result. size is what the previous snapshot weighed
// (zero: none yet), to size the buffer with; PackedWire returns what this
// one weighed.
func (s *WorkState) PackedWire(size SnapshotSize) ([]byte, SnapshotSize) {
	finished := s.counts.Done + s.counts.Dead + s.counts.Cancelled
	sizeHint := size.predict(finished, len(s.entries)-finished)
	// Room for the outer field's tag and length, known only at the end:
	// written right-aligned into it then.
	const reserve = 1 + binary.MaxVarintLen64
	p := packer{wire: true, out: make([]byte, reserve, max(sizeHint, reserve+64))}
	appendInt := func(field protowire.Number, v int64) {
		if v != 0 { // proto3: a zero scalar is not written
			p.out = protowire.AppendTag(p.out, field, protowire.VarintType)
			p.out = protowire.AppendVarint(p.out, uint64(v))
		}
	}
	appendInt(fieldNextOrder, s.nextOrder)
	appendInt(fieldAcceptedTotal, s.acceptedTotal)
	s.eachForSnapshot(p.add)
	p.done()
	appendInt(fieldChunkEntries, p.total)
	if ks := s.keys.keysState(); ks != nil {
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(ks) // a KeysState marshals
		p.out = protowire.AppendTag(p.out, fieldKeys, protowire.BytesType)
		p.out = protowire.AppendBytes(p.out, b)
	}
	for _, jt := range s.PausedTypes() {
		p.out = protowire.AppendTag(p.out, fieldPausedJobTypes, protowire.BytesType)
		p.out = protowire.AppendString(p.out, jt)
	}
	var h [reserve]byte
	hdr := protowire.AppendTag(h[:0], fieldPackedSnapshot, protowire.BytesType)
	hdr = protowire.AppendVarint(hdr, uint64(len(p.out)-reserve))
	start := reserve - len(hdr)
	copy(p.out[start:], hdr)
	return p.out[start:], p.size
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendPID(b []byte, p *messages.PID) []byte {
	b = appendString(b, p.GetAddress())
	b = appendString(b, p.GetId())
	return binary.AppendUvarint(b, uint64(p.GetRequestId()))
}

func appendEntry(b []byte, e *entry) []byte {
	var flags uint64
	if e.waiter != nil {
		flags |= flagWaiter
	}
	if e.plain {
		flags |= flagPlain
	}
	if r := e.rareFields(); r != nil {
		if r.waiters != nil {
			flags |= flagWaiters
		}
		if r.extra != nil {
			flags |= flagExtra
		}
	}
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendUvarint(b, uint64(e.status))
	b = appendString(b, e.id)
	b = appendString(b, e.jobType)
	b = appendBytes(b, e.payload())
	b = binary.AppendVarint(b, int64(e.attempt()))
	b = binary.AppendVarint(b, e.deadline())
	if flags&flagWaiter != 0 {
		b = appendPID(b, e.waiter)
	}
	if flags&flagWaiters != 0 {
		b = binary.AppendUvarint(b, uint64(len(e.moreWaiters())))
		for _, w := range e.moreWaiters() {
			b = appendPID(b, w)
		}
	}
	if flags&flagExtra != 0 {
		b = appendBytes(b, e.extra())
	}
	b = binary.AppendVarint(b, int64(e.attempts))
	b = appendString(b, e.lastError())
	b = appendBytes(b, e.result())
	readyAt, startedAt, workerID := e.readyAt, e.startedAt, e.workerID // plain: its history
	if !e.plain {
		readyAt, startedAt, workerID = e.shown()
	}
	b = binary.AppendVarint(b, readyAt)
	b = binary.AppendVarint(b, e.order)
	b = appendString(b, workerID)
	b = binary.AppendVarint(b, startedAt)
	b = binary.AppendVarint(b, e.finishedAt)
	hist := e.history()
	b = binary.AppendUvarint(b, uint64(len(hist)))
	for _, h := range hist {
		b = binary.AppendUvarint(b, uint64(h.kind))
		b = binary.AppendVarint(b, h.at)
		b = binary.AppendVarint(b, int64(h.attempt))
		b = appendString(b, h.worker)
		b = appendString(b, h.err)
	}
	return b
}

// unpacker reads one chunk. The first error sticks: every later read
// returns a zero value.
type unpacker struct {
	b      []byte
	err    error
	intern map[string]string // job types and worker ids, shared by all chunks
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

// count reads a header total: at most the chunk's length, since every
// counted thing takes at least a byte of it.
func (u *unpacker) count() int {
	v := u.uvarint()
	if v > uint64(len(u.b)) {
		u.fail()
		return 0
	}
	return int(v)
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

func (u *unpacker) pid() *messages.PID {
	return &messages.PID{Address: u.shared(), Id: u.string(), RequestId: uint32(u.uvarint())}
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

// chunk decodes one chunk into entries that share its arrays (see the
// format above).
func (u *unpacker) chunk(chunk []byte) ([]entry, error) {
	if len(chunk) == 0 || chunk[0] < packedFormatV1 || chunk[0] > packedFormat {
		return nil, fmt.Errorf("not in packed format %d to %d (written by a newer master?)", packedFormatV1, packedFormat)
	}
	format := chunk[0]
	u.b, u.err = chunk[1:], nil
	n, idBytes, payloadBytes, histN := u.count(), u.count(), u.count(), u.count()
	if u.err != nil {
		return nil, fmt.Errorf("header: %w", u.err)
	}
	entries := make([]entry, n)
	ids := make([]byte, 0, idBytes)
	idEnd := make([]int, n)
	payloads := make([]byte, 0, payloadBytes)
	hist := make([]histEvent, 0, histN)
	for i := range entries {
		e := &entries[i]
		flags := u.uvarint()
		e.status = messages.WorkStatus(u.uvarint())
		id := u.raw()
		if len(ids)+len(id) > idBytes {
			u.fail()
		} else {
			ids = append(ids, id...)
			idEnd[i] = len(ids)
		}
		e.jobType = u.shared()
		var payload []byte
		if p := u.raw(); len(p) > 0 {
			if len(payloads)+len(p) > payloadBytes {
				u.fail()
			} else {
				start := len(payloads)
				payloads = append(payloads, p...)
				payload = payloads[start:len(payloads):len(payloads)]
			}
		}
		attempt := int32(u.varint())
		e.setSubmitted(u.varint(), attempt)
		if flags&flagWaiter != 0 {
			e.waiter = u.pid()
		}
		if flags&(flagWaiters|flagExtra) != 0 && format < packedFormat {
			u.fail()
		}
		if flags&flagWaiters != 0 {
			k := u.count()
			if k == 0 || k >= maxWaiters {
				u.fail()
			}
			ws := make([]*messages.PID, 0, k)
			for range k {
				if u.err != nil {
					break
				}
				ws = append(ws, u.pid())
			}
			e.setMoreWaiters(ws)
		}
		if flags&flagExtra != 0 {
			x := u.raw()
			if len(x) == 0 {
				u.fail()
			}
			e.setExtra(append([]byte(nil), x...))
		}
		e.heapIdx = -1
		e.attempts = int32(u.varint())
		e.setLastError(u.string())
		// One of the two is kept (entry.data): the result of a done work,
		// the payload of any other.
		if r := u.raw(); e.status == statusDone {
			if len(r) > 0 {
				e.data = append([]byte(nil), r...)
			}
		} else {
			e.data = payload
		}
		e.readyAt = u.varint()
		e.order = u.varint()
		e.workerID = u.shared()
		e.startedAt = u.varint()
		e.finishedAt = u.varint()
		if k := u.uvarint(); k > 0 {
			if k > uint64(histN-len(hist)) || k > historyCap {
				u.fail()
			}
			start := len(hist)
			for range k {
				if u.err != nil {
					break
				}
				ev := histEvent{kind: messages.WorkHistoryKind(u.uvarint()), at: u.varint()}
				ev.attempt = int32(u.varint())
				ev.worker = u.shared()
				ev.err = u.string()
				hist = append(hist, ev)
			}
			// Its own capacity: a later append reallocates rather than
			// write over the next entry's history.
			e.setHistory(hist[start:len(hist):len(hist)])
		}
		if flags&flagPlain != 0 {
			if format == packedFormatV1 || len(e.history()) > 0 || !plainStatus(e) {
				u.fail()
			}
			e.plain = true
			// A plain unfinished entry with a finishing time is a
			// delayed one (entry.delayed): it keeps its acceptance time
			// there.
			e.delayed = e.finishedAt != 0 && !e.finished()
		}
		if u.err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, u.err)
		}
	}
	if len(u.b) > 0 || len(ids) != idBytes || len(payloads) != payloadBytes || len(hist) != histN {
		return nil, fmt.Errorf("%w: the entries do not match the header", errPacked)
	}
	all := string(ids)
	start := 0
	for i := range entries {
		entries[i].id = all[start:idEnd[i]]
		start = idEnd[i]
	}
	return entries, nil
}

// plainStatus reports whether e is in a state a plain history can
// describe (see entry.plain).
func plainStatus(e *entry) bool {
	return (e.status == statusAccepted && e.attempts == 0) || (e.status == statusRunning && e.attempts == 1) || e.status == statusDone
}

// restoreChunks adds the entries of packed chunks to s.
func (s *WorkState) restoreChunks(chunks [][]byte) error {
	u := unpacker{intern: s.shared}
	i := 0
	for c, chunk := range chunks {
		entries, err := u.chunk(chunk)
		if err != nil {
			return fmt.Errorf("%w: chunk %d: %w", ErrBadSnapshot, c, err)
		}
		for k := range entries {
			if err := s.restoreEntry(i, &entries[k]); err != nil {
				return err
			}
			i++
		}
	}
	return nil
}

// RestoreSnapshot rebuilds the state from a snapshot the master wrote: a
// PackedMasterSnapshot, or a MasterSnapshot of a master from before the
// packed encoding. Any other message is ErrBadSnapshot.
func RestoreSnapshot(msg proto.Message) (*WorkState, error) {
	switch m := msg.(type) {
	case *messages.PackedMasterSnapshot:
		return RestoreWorkState(m.GetSnapshot())
	case *messages.MasterSnapshot:
		return RestoreWorkState(m)
	}
	return nil, fmt.Errorf("%w: the snapshot is a %T", ErrBadSnapshot, msg)
}

// RestoredSize is what the entries of a restored snapshot weighed, as one
// average for finished works and the others (the chunks do not tell them
// apart): the activation's first snapshot is sized from it.
func RestoredSize(msg proto.Message) SnapshotSize {
	m, ok := msg.(*messages.PackedMasterSnapshot)
	if !ok || m.GetSnapshot().GetChunkEntries() <= 0 {
		return SnapshotSize{}
	}
	bytes := 0
	for _, c := range m.GetSnapshot().GetChunks() {
		bytes += len(c)
	}
	n := int(m.GetSnapshot().GetChunkEntries())
	return SnapshotSize{otherBytes: bytes, others: n}
}

// The snapshot policy. A snapshot costs in proportion to the works the
// state holds (built on the master's goroutine, which blocks every caller
// while it runs, then written off it in one journal transaction that the
// acknowledgements behind it wait for); recovery replays the events written
// after the newest one. While busy, the master takes a snapshot once the
// events since the previous one reach the works the state holds, so each
// event pays for at most one work's worth of snapshot and a restart under
// load replays at most as many events as the state holds works. The
// earlier rule, half, snapshotted a state that grows by one work per ~2
// events (accepted, completed) each time it grew by a quarter: its stalls
// cost the one-process bench about a tenth of its throughput and doubled
// its p99 (BENCHMARKS.md, "Issue 17 on a faster machine").
// Once idle for a fence-check interval (persistence.IdleSnapshotter), it
// takes one already at a sixteenth: after a burst of submissions, the master
// has the time, and a restart then replays next to nothing. Each work of a
// WorksAccepted counts as an event (EventWeight).
const (
	busySnapshotDivisor = 1
	idleSnapshotDivisor = 16
)

// WantsSnapshot reports whether a snapshot is due with since events (each
// work of a WorksAccepted counting one, EventWeight) journaled after the
// previous one, busy or idle.
func (s *WorkState) WantsSnapshot(since int, idle bool) bool {
	if idle {
		return since*idleSnapshotDivisor >= s.Len()
	}
	return since*busySnapshotDivisor >= s.Len()
}

// EventWeight is what ev counts for the snapshot policy: each work of a
// WorksAccepted counts as an event, since replay accepts each (the policy
// then bounds replay in works, as before batches were grouped). A
// WorksStarted counts one: replaying a hand-out costs next to nothing.
func EventWeight(ev proto.Message) int {
	if g, ok := ev.(*messages.WorksAccepted); ok {
		return len(g.GetWorks())
	}
	return 1
}
