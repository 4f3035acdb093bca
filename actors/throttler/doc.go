// Package throttler passes messages on to a target actor at no more than a
// given rate: seed 002's TimerBasedThrottler ("Throttling messages in Akka
// 2"), ported to protoactor-go, with strict modes, a bounded queue and a
// rate limiter usable without an actor.
//
// A throttler is an actor. Spawn it from [Props] with a [Rate], give it a
// target with [SetTarget] (or [WithTarget]) and send it the messages to
// throttle. It delivers them in the order received, to the target, with the
// original sender (and headers) preserved, so the target's c.Sender() is
// whoever sent the message to the throttler and c.Respond answers them.
//
// # Messages
//
//   - [SetTarget]: set the target; a nil Target pauses delivery (messages
//     are queued, nothing is lost) until a target is set again.
//   - [SetRate]: change the rate at once (see [FSM.SetRate] for the
//     mid-period rule); an invalid rate gets a [Rejected] reply.
//   - [GetStats]: the reply is a *[Stats] (state, queued, delivered,
//     rejected, dropped).
//   - [Queue]: wraps a message to throttle; needed only for values of this
//     package's message types. Any other message is throttled as it is.
//   - [Rejected]: the reply to the sender of a refused message: the queue
//     was full ([ErrQueueFull]) or the rate invalid ([ErrInvalidRate]).
//
// # States
//
// The logic is the pure [FSM] (seed 002, "The implementation"): the
// throttler is [StateActive] iff a target is set and messages wait or the
// timer period of the latest delivery is still running; otherwise it is
// [StateIdle] and no timer runs. In [ModeTimer] (the seed's) a periodic timer
// restores Rate.Calls vouchers every Rate.Per. Its guarantee is weak: only
// the timer's own periods hold at most Calls deliveries.
//
// [ModeSlidingWindow] and [ModeTokenBucket] are strict: no window of length
// Per, wherever it starts, holds more than Calls deliveries. The sliding
// window lets bursts of up to Calls out at once; the token bucket spreads
// deliveries evenly with at most [WithBurst] at once. Strict modes arm a
// one-shot timer for the moment the next delivery is allowed, only while
// messages wait. Their logic is the [Limiter], which needs no actor: code
// that hands out work can call [Limiter.Reserve] with the current time and
// either hand out now or try again after the returned wait.
//
// # Queue bound
//
// At most [WithMaxQueue] messages wait (default [DefaultMaxQueue]); a
// message that meets a full queue is rejected with a reply, or the oldest
// or the newest is dropped, as [WithOverflow] says.
//
// # Permits for many callers
//
// [PermitThrottlerProps] is the throttler every --rate of a Foreman node
// runs, one per limited job type: the same FSM, whose messages are the
// permits the master shards ask for, each kept with its sender (the shard's
// [PermitPool]) and granted to it as the rate allows. Its decisions are the
// pure [PermitCore]; its shell keeps the rate and every grant on the
// persistence runtime (epochs, lease, group commit) and sends a grant only
// once it is durable, so one activation grants at a time and a successor
// resumes the predecessor's timer period or sliding window from the
// journal: no burst above the bound and no pause of a period. With
// P = Per, C = Calls: in ModeTimer no throttler period of P holds more
// than C grants (a sliding window of P at most 2C); in strict mode
// (ModeSlidingWindow over the permits, anchored on the spend times the
// pools report, PermitCore.Used) no window of P holds more than C spends,
// provided the clocks of the hosts
// agree (skew adds to the bound). A PermitPool spends its permits without
// blocking (its Reserve is master.DispatchLimiter's) and asks again
// asynchronously; unspent permits of a caller that dies are lost: the rate
// is under-used, never exceeded.
//
// # Example
//
//	props, err := throttler.Props(throttler.PerSecond(3),
//		throttler.WithTarget(printer), throttler.WithMode(throttler.ModeSlidingWindow))
//	if err != nil { ... }
//	thr := system.Root.Spawn(props)
//	for i := range 7 {
//		system.Root.Send(thr, i) // 0,1,2 now; 3,4,5 a second later; then 6
//	}
package throttler
