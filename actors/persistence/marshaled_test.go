package persistence_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/persistence"
)

func TestMarshaled(t *testing.T) {
	t.Parallel()
	strType := (*wrapperspb.StringValue)(nil).ProtoReflect().Type()

	t.Run("IsTheMessageItEncodes", func(t *testing.T) {
		t.Parallel()
		// A journal that marshals it, not knowing the type, stores the
		// same bytes.
		data, err := proto.MarshalOptions{Deterministic: true}.Marshal(wrapperspb.String("state"))
		require.NoError(t, err)
		m := &persistence.Marshaled{Type: strType, Data: data}
		require.True(t, proto.Equal(wrapperspb.String("state"), m))
		again, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		require.NoError(t, err)
		require.Equal(t, data, again)
	})

	t.Run("PanicsOnBytesNotOfItsType", func(t *testing.T) {
		t.Parallel()
		m := &persistence.Marshaled{Type: strType, Data: []byte{0xff}}
		require.Panics(t, func() { m.ProtoReflect() })
	})
}
