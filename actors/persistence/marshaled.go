package persistence

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Marshaled is a message handed over in its wire form. A Handler returns
// one from Snapshot or IdleSnapshot when its state is large: it appends the
// state straight into the bytes the journal stores, where a message would
// first be built and then copied whole by marshalling (for a master of a
// million works, two transient copies of 60 MB or more on top of the state).
// A Journal stores Data as the wire form of a message of Type, so the
// snapshot loads back as that message, never as a Marshaled; the journals of
// this module (cluster/journal) store Data as is. Data must not be modified
// once handed over.
//
// Marshaled is a proto.Message so that it travels where one does: a journal
// that does not know it sees, through ProtoReflect, the message Data decodes
// to (decoded on first use), and so stores the same state, only at the cost
// of the decode and the copy that this type spares.
type Marshaled struct {
	// Type is the generated message type Data encodes.
	Type protoreflect.MessageType
	// Data is the message's wire form.
	Data []byte

	once sync.Once // guards decoded
	// decoded is Data as a message, for ProtoReflect.
	decoded protoreflect.Message
}

// ProtoReflect implements proto.Message with the message Data decodes to.
// It panics when Data is not a message of Type: the handler that built it
// is broken, and a journal must not store it.
func (m *Marshaled) ProtoReflect() protoreflect.Message {
	m.once.Do(func() {
		msg := m.Type.New()
		if err := proto.Unmarshal(m.Data, msg.Interface()); err != nil {
			panic(fmt.Sprintf("persistence: Marshaled data is not a %s: %v", m.Type.Descriptor().FullName(), err))
		}
		m.decoded = msg
	})
	return m.decoded
}
