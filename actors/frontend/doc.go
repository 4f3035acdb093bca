// Package frontend is the front of Foreman's distributed workers (seed 001,
// the classic Akka 2.5 sample): the Frontend actor that submits work to the
// master and answers Ok or NotOk, the WorkProducer that simulates clients,
// the WorkResultConsumer that logs "Consumed result", and the Client, the Go
// API that HTTP handlers and the foreman binary use.
//
// # Messages
//
//	sender   -> Frontend  *messages.Work        (Request, so the answer finds the sender)
//	Frontend -> master    *messages.Work        one ask, 5 s timeout (WithAskTimeout)
//	master   -> Frontend  Ack | WorkRejected
//	Frontend -> sender    *Ok | *NotOk          NotOk carries the error (ErrTimeout, ErrRejected, ...)
//	EventStream           *messages.WorkResult  consumed by the WorkResultConsumer
//	any      -> Consumer  *messages.WorkResult  (direct delivery, e.g. cluster pub-sub)
//	any      -> Consumer  GetStats -> Stats
//
// # Submitting from Go
//
// The Client and the Frontend actor reach the master through a
// route.Master (package actors/route): route.Fixed(pid) in one process,
// route.Resolver(fn) in a cluster. An unreachable master is reported as
// route.ErrNoMaster, the one "no master" error of Foreman.
//
// [Client.Submit] (or [Submit]) sends a Work until the master acknowledges
// it: nil means the work is durable. Timeouts, an unreachable master and a
// temporary rejection (REJECT_CODE_UNAVAILABLE) are retried with backoff and
// the same work id, which the master acknowledges again without queueing it
// twice; a permanent rejection returns a [*RejectedError] (errors.Is
// ErrRejected); ctx ends the wait at once.
//
// # States
//
// The WorkProducer has two modes. In interval mode (the sample) it has one
// job in flight: produce, wait for Ok, pause 3-10 s, produce again. With
// WithJobs(n) it keeps WithConcurrency jobs in flight until n are
// acknowledged. In both, NotOk re-sends the same work after 3 s.
//
// # Example
//
//	client, err := frontend.NewClient(sys, route.Fixed(master))
//	if err != nil { ... }
//	err = client.Submit(ctx, &messages.Work{WorkId: id, JobType: "square", Payload: []byte("7")})
//	switch {
//	case err == nil:                              // durable: 201 Created
//	case errors.Is(err, frontend.ErrRejected):    // 400/413 with the reason
//	default:                                      // ctx ended: 503, Retry-After
//	}
package frontend
