// Package adaptive is self-tuning concurrency: a scheduler that measures
// throughput at each concurrency level and moves towards the best one, a
// port of Santa's Mailbox (seed 004) without the seed's upward drift.
//
// The package has three layers:
//
//   - Policy, the pure tuner: (state, observation, now) -> (state, level).
//     Policies read no clock (now is an argument), draw from their own seeded
//     random source and start no goroutines, so tests are deterministic.
//     HillClimb is the default, Seed is the seed's rule exactly, Vegas is
//     latency based (TCP Vegas as in Netflix's concurrency-limits). The
//     seed's two other mailboxes are policies too, to compare with:
//     Unbounded (WithUnbounded) is its naive Parallel mailbox, every job
//     started at once, and Fixed (NewFixed, WithFixed) its Queued mailbox, a
//     static limit.
//   - Core, the scheduler's pure state: a FIFO queue, the count in flight and
//     a policy. Push and Done return the jobs to start now.
//   - Two shells over Core: the Scheduler actor (Props), and Limiter, a plain
//     Go semaphore whose size is tuned (Acquire(ctx) / Permit.Release), for a
//     worker node sizing its executor pool.
//
// # Policies
//
// Seed follows the seed rule for rule: on each completion an exponential
// moving average (LearningRate) of in-flight / elapsed, elapsed measured
// from the job's arrival in the queue, keyed by the in-flight count; then a
// random neighbour with probability ExplorationRate, else the better
// neighbour. It decides on arrivals too, as the seed's mailbox does on every
// message. Its estimates grow with the in-flight count whenever the work is
// app-limited, so it drifts upwards; the tests show it.
//
// HillClimb measures completions per second of busy time over jittered
// windows of at least three mean service times, ignores windows in which
// nobody waited (app-limited), scores each level as throughput /
// level^Penalty, never rises while the CPU is saturated, forgets estimates
// older than StaleAfter and re-probes them (sooner when a neighbour lost by
// less than the windows' noise, later when a lower one lost clearly). It
// starts by doubling (slow start) and then climbs one step at a time, the
// step doubling while probes keep paying; a probe that is clearly losing
// ends early. When a window's throughput departs by more than 30% from the
// current level's estimate, the service has changed: it forgets every
// estimate and, if the throughput fell, halves the level, if it rose,
// doubles again, so it follows a moving optimum.
//
// Which is the default is decided by the evaluation in package sim and
// examples/santa/eval: six simulated services (a flat CPU service, a
// congested resource, three whose throughput collapses past a contention
// point, two of which move it mid-run, and a Universal Scalability Law curve
// whose optimum rises from 8 to 24), and one held out from tuning (an
// optimum that drifts from 40 down to 8). Each policy is scored as the
// fraction of the gap between the worst and the best fixed level (per stage)
// it recovers. HillClimb wins or ties on all seven (94-100% of the gap over
// seeds 1-5); Vegas sits above the knee of the sharp ones (68-86%, seed 1). The evaluation's verdict also
// holds the default against the best fixed level and the seed's Queued
// mailbox (a fixed 4) per service and exits with status 3 where it loses by
// more than a point: on the flat CPU service a fixed 2 recovers 100% and
// the default 98.9-99.3%, which is a loss on one seed of five.
//
// Vegas compares windowed service times with the lowest seen and keeps the
// implied queue inside the resource between alpha and beta.
//
// # Messages
//
// The Scheduler receives *Batch (or Batch) and *GetStatus (answered with a
// Status through c.Respond). With WithListener it sends *BatchQueued and
// *JobCompleted, each carrying the Status after the event, and after each of
// them one *JobStarted per job the event started. Jobs run in their
// own goroutines and report back to the actor with a message; a panic in a
// job becomes ErrJobPanicked. Stopping the actor cancels the jobs' context
// and waits for them. Messages are Go values: the scheduler is local to a
// node (nothing crosses the wire).
//
// At Debug, the scheduler logs the seed's line on every event:
//
//	Queue: 91, In Flight: 4, Parallelism: 4
//
// # States
//
// Core has no modes: the limit moves with every decision. HillClimb has
// two phases, slow start (entered at creation, left when a doubling does not
// pay or growth is not allowed) and climbing, and a probe flag (set when it
// moves to an unmeasured neighbour, cleared by the next measured window; an
// upward probe that finds no demand goes back).
//
// # Example
//
//	props, err := adaptive.Props(adaptive.WithLogger(logger))
//	if err != nil {
//		return err
//	}
//	pid := system.Root.Spawn(props)
//	system.Root.Send(pid, &adaptive.Batch{Jobs: jobs})
//
// A worker node sizes its executor pool with a Limiter: one Acquire per work
// item before running it, Release when done (see Limiter).
package adaptive
