// Package pids converts between protoactor's actor.PID and messages.PID, the
// wire type that names an actor in Foreman's protocol. The two encode to the
// same bytes; messages declares its own so that the protocol's pure cores
// and the simulator do not depend on protoactor. Only actor shells convert.
package pids

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/messages"
)

// Actor returns the actor.PID that p names, or nil for nil.
func Actor(p *messages.PID) *actor.PID {
	if p == nil {
		return nil
	}
	return &actor.PID{Address: p.GetAddress(), Id: p.GetId(), RequestId: p.GetRequestId()}
}

// Wire returns the messages.PID that names p, or nil for nil.
func Wire(p *actor.PID) *messages.PID {
	if p == nil {
		return nil
	}
	return &messages.PID{Address: p.GetAddress(), Id: p.GetId(), RequestId: p.GetRequestId()}
}

// Same reports whether a and b name the same actor (address and id; the
// request id of a future is not part of an actor's name).
func Same(a *messages.PID, b *actor.PID) bool {
	return a.GetAddress() == b.GetAddress() && a.GetId() == b.GetId()
}
