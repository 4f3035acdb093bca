package sim

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// msgText renders a message for the trace in a fixed form: its short type
// name and its set fields in field-number order (prototext's output
// varies on purpose, and a trace must not). Only called when tracing.
func msgText(m proto.Message) string {
	if m == nil {
		return "<nil>"
	}
	var b strings.Builder
	writeMsg(&b, m.ProtoReflect())
	return b.String()
}

func writeMsg(b *strings.Builder, r protoreflect.Message) {
	b.WriteString(string(r.Descriptor().Name()))
	b.WriteByte('{')
	fields := r.Descriptor().Fields()
	first := true
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !r.Has(fd) {
			continue
		}
		if !first {
			b.WriteByte(' ')
		}
		first = false
		b.WriteString(string(fd.Name()))
		b.WriteByte(':')
		v := r.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			b.WriteByte('[')
			for k := range l.Len() {
				if k > 0 {
					b.WriteByte(' ')
				}
				writeValue(b, fd, l.Get(k))
			}
			b.WriteByte(']')
		case fd.IsMap():
			fmt.Fprintf(b, "map(%d)", v.Map().Len())
		default:
			writeValue(b, fd, v)
		}
	}
	b.WriteByte('}')
}

func writeValue(b *strings.Builder, fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		writeMsg(b, v.Message())
	case protoreflect.BytesKind:
		fmt.Fprintf(b, "%q", v.Bytes())
	case protoreflect.StringKind:
		b.WriteString(v.String())
	default:
		fmt.Fprint(b, v.Interface())
	}
}
