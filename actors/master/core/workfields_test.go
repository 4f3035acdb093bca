package core

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/foreman-actors/foreman/messages"
)

// fillMessage sets every field of m, found by walking its descriptor, to a
// value that is not the zero one, recursing into message fields (depth
// bounds a recursive message): a field added to the proto is filled without
// anyone listing it here.
func fillMessage(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && od.Fields().Get(0) != fd {
			continue // one member of a oneof can be set
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			if fd.Message() != nil {
				if depth < 3 {
					fillMessage(l.AppendMutable().Message(), depth+1)
				}
			} else {
				l.Append(nonZero(fd))
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			key := nonZero(fd.MapKey()).MapKey()
			if fd.MapValue().Message() != nil {
				if depth < 3 {
					fillMessage(mp.Mutable(key).Message(), depth+1)
				}
			} else {
				mp.Set(key, nonZero(fd.MapValue()))
			}
		case fd.Message() != nil:
			if depth < 3 {
				fillMessage(m.Mutable(fd).Message(), depth+1)
			}
		default:
			m.Set(fd, nonZero(fd))
		}
	}
}

// nonZero returns a value of fd's kind that is not its zero value, distinct
// per field number.
func nonZero(fd protoreflect.FieldDescriptor) protoreflect.Value {
	n := int64(fd.Number())
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		for i := range vals.Len() {
			if v := vals.Get(i).Number(); v != 0 {
				return protoreflect.ValueOfEnum(v)
			}
		}
		return protoreflect.ValueOfEnum(1)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(100 + n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(1<<40 + n)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(200 + n))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(1<<41 + n))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(n) + 0.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(n) + 0.25)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(fmt.Sprintf("%s-%d", fd.Name(), n))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(fmt.Sprintf("%s-%d", fd.Name(), n)))
	}
	panic(fmt.Sprintf("nonZero: kind %v of %s", fd.Kind(), fd.FullName()))
}

// lostFields names the fields of want that got does not carry (set fields
// whose value differs, unknown fields).
func lostFields(want, got proto.Message) []string {
	var lost []string
	wm, gm := want.ProtoReflect(), got.ProtoReflect()
	fields := wm.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !wm.Has(fd) {
			continue
		}
		if !gm.Has(fd) || !wm.Get(fd).Equal(gm.Get(fd)) {
			lost = append(lost, fmt.Sprintf("%s (%d)", fd.Name(), fd.Number()))
		}
	}
	if !bytes.Equal(wm.GetUnknown(), gm.GetUnknown()) {
		lost = append(lost, fmt.Sprintf("unknown fields %x (got %x)", wm.GetUnknown(), gm.GetUnknown()))
	}
	return lost
}

// fullWork is a messages.Work with every field set (fillMessage).
func fullWork(t *testing.T) *messages.Work {
	t.Helper()
	w := &messages.Work{}
	fillMessage(w.ProtoReflect(), 0)
	fields := w.ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		require.True(t, w.ProtoReflect().Has(fields.Get(i)), "fillMessage left %s unset", fields.Get(i).Name())
	}
	return w
}

// withUnknown returns w with a field this binary does not know, as a Work
// from a newer frontend carries one: a master keeps it for the newer
// workers, as proto.Clone and the journal's WorkAccepted do.
func withUnknown(w *messages.Work) *messages.Work {
	w = proto.Clone(w).(*messages.Work)
	var b []byte
	b = protowire.AppendTag(b, 1000, protowire.BytesType)
	b = protowire.AppendString(b, "from a newer frontend")
	w.ProtoReflect().SetUnknown(b)
	return w
}

// TestWorkFieldsSurvive walks messages.Work's descriptor and fails when a
// field of a submitted Work is not carried through the master's entry
// (newEntry, toWork: what a worker is handed and GetWork shows) and through
// a snapshot (the packed encoding, marshalled as the journal stores it, and
// restored; and the older WorkEntry form, which goes through newEntry).
// entry.go and snapshot.go list Work's fields by hand for memory's sake:
// this is what stops a new field from being silently dropped (issue 34
// item 6).
func TestWorkFieldsSurvive(t *testing.T) {
	t.Parallel()
	for name, w := range map[string]*messages.Work{
		"EveryField":             fullWork(t),
		"EveryFieldAndAnUnknown": withUnknown(fullWork(t)),
		"OnlyAnUnknown":          withUnknown(&messages.Work{WorkId: "u", JobType: "j"}),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := proto.Clone(w).(*messages.Work)

			t.Run("Entry", func(t *testing.T) {
				got := newEntry(in).toWork()
				require.Empty(t, lostFields(w, got), "dropped by newEntry -> toWork")
				require.True(t, proto.Equal(w, got))
			})

			t.Run("Snapshot", func(t *testing.T) {
				s := NewWorkState()
				require.NoError(t, s.Apply(&messages.WorkAccepted{Work: in, AtUnixNano: 5}))
				require.Empty(t, lostFields(w, s.Work(w.GetWorkId())), "dropped on acceptance")

				// As the master writes it (PackedWire), stored, and read back.
				wire, _ := s.PackedWire(SnapshotSize{})
				var snap messages.PackedMasterSnapshot
				require.NoError(t, proto.Unmarshal(wire, &snap))
				r, err := RestoreSnapshot(&snap)
				require.NoError(t, err)
				require.Empty(t, lostFields(w, r.Work(w.GetWorkId())), "dropped by the packed snapshot")
				// A run_at delays the hand-out (issue 37): asked once it is due.
				require.Empty(t, lostFields(w, r.NextReady(time.Unix(0, max(10, w.GetRunAtUnixNano())), nil)), "dropped from the hand-out after a restore")

				// Snapshot (chunks as a list), marshalled.
				data, err := proto.Marshal(s.Snapshot())
				require.NoError(t, err)
				var ms messages.MasterSnapshot
				require.NoError(t, proto.Unmarshal(data, &ms))
				r, err = RestoreWorkState(&ms)
				require.NoError(t, err)
				require.Empty(t, lostFields(w, r.Work(w.GetWorkId())), "dropped by Snapshot")

				// A snapshot of a master from before the packed encoding.
				old := &messages.MasterSnapshot{Entries: []*messages.WorkEntry{{Work: in, Status: statusAccepted, ReadyAtUnixNano: 5}}}
				data, err = proto.Marshal(old)
				require.NoError(t, err)
				ms.Reset()
				require.NoError(t, proto.Unmarshal(data, &ms))
				r, err = RestoreWorkState(&ms)
				require.NoError(t, err)
				require.Empty(t, lostFields(w, r.Work(w.GetWorkId())), "dropped by a WorkEntry snapshot")
			})
		})
	}
}

// TestWorkInlineFields: the fields an entry keeps inline are Work's by
// these numbers and names (a renumbered field would otherwise be kept
// twice, or not at all). Not parallel: AllocsPerRun.
func TestWorkInlineFields(t *testing.T) {
	fields := (&messages.Work{}).ProtoReflect().Descriptor().Fields()
	for num, name := range map[protoreflect.FieldNumber]protoreflect.Name{
		fieldWorkID: "work_id", fieldJobType: "job_type", fieldPayload: "payload", fieldAttempt: "attempt",
		fieldDeadlineUnixNano: "deadline_unix_nano", fieldWaiter: "waiter",
	} {
		fd := fields.ByNumber(num)
		require.NotNil(t, fd, "Work has no field %d", num)
		require.Equal(t, name, fd.Name())
	}
	// A Work with only inline fields set has nothing extra: the common
	// case costs no allocation.
	require.Nil(t, extraOf(&messages.Work{WorkId: "a", JobType: "b", Payload: []byte("c"), Attempt: 1, DeadlineUnixNano: 2}))
	w := &messages.Work{WorkId: "a", JobType: "b"}
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = extraOf(w) }))
}
