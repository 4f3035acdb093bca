package pulling

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"
)

// Codec turns work items into bytes for workers on other nodes, and back.
// Local workers receive items as Go values and never use it; a master or
// worker that talks to another node needs one (option WithCodec).
type Codec[T any] interface {
	Encode(item T) ([]byte, error)
	Decode(data []byte) (T, error)
}

// JSONCodec returns a Codec that uses encoding/json.
func JSONCodec[T any]() Codec[T] { return jsonCodec[T]{} }

type jsonCodec[T any] struct{}

func (jsonCodec[T]) Encode(item T) ([]byte, error) { return json.Marshal(item) }

func (jsonCodec[T]) Decode(data []byte) (T, error) {
	var item T
	err := json.Unmarshal(data, &item)
	return item, err
}

// ProtoCodec returns a Codec for items that are protobuf messages; newFunc
// returns an empty message to decode into.
func ProtoCodec[T proto.Message](newFunc func() T) Codec[T] { return protoCodec[T]{newFunc: newFunc} }

type protoCodec[T proto.Message] struct{ newFunc func() T }

func (protoCodec[T]) Encode(item T) ([]byte, error) { return proto.Marshal(item) }

func (c protoCodec[T]) Decode(data []byte) (T, error) {
	m := c.newFunc()
	err := proto.Unmarshal(data, m)
	return m, err
}

// StringCodec is a Codec for string items (the bytes of the string).
var StringCodec Codec[string] = stringCodec{}

type stringCodec struct{}

func (stringCodec) Encode(item string) ([]byte, error) { return []byte(item), nil }
func (stringCodec) Decode(data []byte) (string, error) { return string(data), nil }

func encodeItem[T any](c Codec[T], item T) ([]byte, error) {
	if c == nil {
		return nil, ErrNoCodec
	}
	b, err := c.Encode(item)
	if err != nil {
		return nil, fmt.Errorf("pulling: encode item: %w", err)
	}
	return b, nil
}
