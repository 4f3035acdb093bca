// Package messages holds everything that crosses a node or goes to disk:
// the protobuf messages of Foreman's protocols and journal events, with the
// generated Go code committed beside the .proto files.
//
// Regenerate after editing a .proto file with:
//
//	go generate ./messages
package messages

//go:generate bash gen.sh
