// Package core is the frontend's protocol as pure values: the submission
// of work to its shard's master with timeouts, retries and a deadline
// ([Submission], with the policy [Retry] that the Client's blocking loop
// consults too), the Call that waits for the outcome, and the result
// consumer's decisions ([Consumer]: deduplication by outcome with
// [Dedupe], and reading the durable result feed from a [Cursor]). Nothing
// here starts a goroutine, reads a clock, draws an unseeded random number
// or imports protoactor; actors/frontend's Client and WorkResultConsumer
// are the shells that carry the decisions out, and the simulator
// (actors/sim) runs the same values on virtual time.
//
// # Driving a Submission
//
//	s := core.NewSubmission(core.SubmitConfig{Shards: n, Deadline: dl}, works...)
//	effs := s.Step(now, core.Begin{})
//
// Carry out the effects in order:
//
//   - Ask{Shard, Attempt, Msg}: send Msg to shard Shard's master as your
//     route finds it (see actors/route/core: Owner(members,
//     ShardKind("master", k, n), ShardName("master", k, n)) over the node's
//     membership view); step the answer back as
//     Answered{Attempt, Msg}, or Unreachable{Attempt} when no master was
//     found or the answer was a dead letter (Gone: the master's node left
//     while the ask was in flight). Answers to older attempts are ignored.
//   - Forget{Shard}: the master did not answer in time; look it up again
//     for the next ask.
//   - effect.Timer / effect.StopTimer: arm or disarm; step effect.Fired.
//   - Submitted{Outcomes}: the submission ended; one WorkOutcome per work
//     (accepted: durable; rejected for good; gave up; failed).
//   - Outcome{Result} (a Call, SubmitConfig.Wait): the wait ended with the
//     work's final result, or nil when the caller left first.
//   - effect.Log: a line for the node's log.
//
// Step CallerLeft when the caller's ctx is cancelled (its deadline is
// SubmitConfig.Deadline's own timer), and Delivered{Result} when the
// call's interest (actors/waiter/core.Interest) delivers the outcome.
//
// A Call attaches its waiter as the Client's does: give the work's
// Waiter field the address of an actors/waiter/core.Interest made for
// this caller before NewSubmission; step the Interest with CallerGone when
// the caller leaves (workers then skip or cancel the job), Released for a
// Detach (and Ask the shard's master DetachWaiter), and Closed once the
// Call's Outcome came while the caller still waited.
//
// # Driving a Consumer
//
//	c := core.NewConsumer(core.ConsumerConfig{Window: core.DefaultDedupeWindow})
//	effs := c.Step(now, core.CursorLoaded{Cursor: saved, OK: true})
//
// It answers ReadFeed{After, Limit, Wait}: read the feed (every shard, as
// MergePages merges them) and step FeedRead{Page}, FeedGone{Oldest} (410),
// FeedAhead{} or FeedFailed{}. A page's entries come back as Consumed or
// Duplicate effects, then SaveCursor{Cursor} (save it; a consumer that
// crashes before saving reads the page again: at least once), then the
// next ReadFeed. Results pushed by pub-sub are stepped as Pushed{Result}.
// ConsumerConfig.Planted is test-only (see Bug).
package core
