// Package protolog fits protoactor-go's log records to a Foreman node's
// logger.
//
// protoactor logs its routine work (endpoints connecting, topology updates,
// dead letters, gossip) at Info, and every failed attempt to reach a peer at
// Error: a node that loses a member logs "EndpointWriter failed to connect"
// once per retry and per address that still had messages queued for it. A
// [Handler] wraps the node's slog.Handler and rewrites the library's records
// before they reach it:
//
//   - Debug becomes [LevelLibraryDebug] (Debug-4) and Info becomes Debug, so
//     a node at --log-level info shows only what needs attention and
//     --log-level debug shows the library's routine work;
//   - the first connection failure for an address becomes one Warn record,
//     "lost the connection to a node", with the address, the error and the
//     library's own message under "event"; later failures for that address
//     are Debug until the library reports it connected again. A failed
//     attempt to connect counts for any address; the loss of an established
//     connection only for a cluster member (see [Handler.SetMembers]): a
//     member that leaves gracefully is dropped from the topology before it
//     closes its connections, and clients (frontends, workers) come and go;
//   - a peer that said it was leaving (protoactor's graceful remote stop
//     sends a DisconnectRequest) is not reported as lost, and failures of
//     this node's own connections while it closes them (gRPC code
//     Canceled) are Debug;
//   - Warn and Error records not listed above pass through unchanged.
//
// Records are recognised by the library's message texts (see the
// connection* variables in handler.go). A text the pinned protoactor-go
// version does not use is not rewritten, so a changed text shows up at its
// original level rather than being hidden.
//
// # Example
//
//	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
//		return slog.New(protolog.NewHandler(log.Handler())).With("lib", "protoactor")
//	}))
package protolog
