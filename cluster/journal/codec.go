package journal

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/foreman-actors/foreman/actors/persistence"
)

// record is a message as a backend stores it: its protobuf full name and its
// wire bytes.
type record struct {
	seq  int64
	name string
	data []byte
}

// encode marshals msg for storage.
func encode(stream string, seq int64, msg proto.Message) (record, error) {
	if msg == nil {
		return record{}, fmt.Errorf("%w: stream %q seq %d: nil message (every event and snapshot needs a generated protobuf message)", persistence.ErrInvalid, stream, seq)
	}
	if m, ok := msg.(*persistence.Marshaled); ok {
		// Already in its wire form (a large snapshot): stored as is, with
		// no marshalled copy.
		if m.Type == nil {
			return record{}, fmt.Errorf("%w: stream %q seq %d: Marshaled without a Type", persistence.ErrInvalid, stream, seq)
		}
		return record{seq: seq, name: string(m.Type.Descriptor().FullName()), data: m.Data}, nil
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		return record{}, fmt.Errorf("journal: marshal stream %q seq %d (%s): %w", stream, seq, msg.ProtoReflect().Descriptor().FullName(), err)
	}
	return record{seq: seq, name: string(msg.ProtoReflect().Descriptor().FullName()), data: data}, nil
}

// encodeEvents checks that events are contiguous among themselves and
// marshals them.
func encodeEvents(stream string, events []persistence.Event) ([]record, error) {
	if err := checkStream(stream); err != nil {
		return nil, err
	}
	recs := make([]record, len(events))
	for i, ev := range events {
		if i > 0 && ev.Seq != events[i-1].Seq+1 {
			return nil, fmt.Errorf("%w: stream %q: event %d has seq %d after seq %d (events of one append must be contiguous)", persistence.ErrConflict, stream, i, ev.Seq, events[i-1].Seq)
		}
		r, err := encode(stream, ev.Seq, ev.Msg)
		if err != nil {
			return nil, err
		}
		recs[i] = r
	}
	return recs, nil
}

// decode turns a stored record back into a message through the global
// protobuf registry.
// decodeEvent returns the event of r: decoded, or with a nil Msg when types
// is not nil and r's type is not among them (persistence.TypedLoader).
func decodeEvent(stream string, r record, types []protoreflect.FullName) (persistence.Event, error) {
	if types != nil && !slices.Contains(types, protoreflect.FullName(r.name)) {
		return persistence.Event{Seq: r.seq}, nil
	}
	msg, err := decode(stream, r.seq, r.name, r.data)
	return persistence.Event{Seq: r.seq, Msg: msg}, err
}

func decode(stream string, seq int64, name string, data []byte) (proto.Message, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(name))
	if err != nil {
		return nil, fmt.Errorf("%w: stream %q seq %d has type %q, which is not linked into this program (import the package that generates it): %w", persistence.ErrUnknownType, stream, seq, name, err)
	}
	msg := mt.New().Interface()
	if err := proto.Unmarshal(data, msg); err != nil {
		return nil, fmt.Errorf("journal: stream %q seq %d: decode %s: %w (the stored bytes are damaged or the type changed incompatibly)", stream, seq, name, err)
	}
	return msg, nil
}

// checkStream rejects stream names no backend can store.
func checkStream(stream string) error {
	if stream == "" {
		return fmt.Errorf("%w: empty stream name (pass the persistence id of the actor)", persistence.ErrInvalid)
	}
	return nil
}

// fenced is the error for an epoch that is not the stream's current one.
func fenced(stream string, epoch, current int64) error {
	if epoch > current {
		return fmt.Errorf("%w: stream %q: epoch %d was never acquired (current epoch %d; call AcquireEpoch)", persistence.ErrFenced, stream, epoch, current)
	}
	return fmt.Errorf("%w: stream %q: epoch %d, current epoch %d", persistence.ErrFenced, stream, epoch, current)
}

// conflict is the error for an append that does not follow lastSeq.
func conflict(stream string, first, lastSeq int64) error {
	return fmt.Errorf("%w: stream %q: append starts at seq %d but the last stored seq is %d (want %d)", persistence.ErrConflict, stream, first, lastSeq, lastSeq+1)
}
