// Package pulling is the work pulling pattern (seed 000): a master owns an
// Epic, a lazy and possibly huge source of work, and hands its items to
// workers that pull them, so work never piles up in mailboxes however slow
// the workers are.
//
// The master fetches batches from the Epic only as workers ask for items
// (the seed's dao.findWorkBatch), broadcasts WorkAvailable when an Epic
// starts, hands out one item per GimmeWork, and does not answer when nothing
// is left: workers wait for the next WorkAvailable. Workers register by PID,
// on the master's node or on another one, and never poll.
//
// Beyond the seed, items are delivered at least once: the master tracks
// every item handed out until the worker confirms it. An item whose worker
// terminates (the master watches every worker) or that is not confirmed
// within the ack timeout is handed out again; an item whose work reports an
// error is retried up to a limit. A worker may hold a window of W items at
// once for high-latency links, and the master reports progress (handed out,
// confirmed, re-delivered, failed, remaining when the Epic can tell).
//
// # Messages
//
// Between master and workers (protobuf, messages/pulling.proto, so they
// cross nodes): PullingRegister, PullingWorkAvailable, PullingGimmeWork
// (with a credit for the window), PullingWork (an item encoded by the
// master's [Codec], for workers on other nodes), PullingWorkDone (confirm
// and ask again), PullingGetProgress and PullingProgress. Workers in the
// master's own actor system receive [Work] with the item as a Go value.
//
// Local messages: [StartEpic], answered with [EpicStarted] or
// [CurrentlyBusy], then [EpicDone] when the Epic ends. A second Epic while
// one runs is refused, not queued: the caller owns the order of its Epics
// and retries on EpicDone. [Run] wraps the exchange in a blocking call.
//
// # States
//
// The master's logic is the pure type [State] (no actors, no clock): idle
// between Epics, running while the Epic has items or items are unconfirmed.
// The actor shell performs the [Effects] it returns: deliveries, WorkAvailable
// announcements, Epic fetches (in a goroutine, answered by a message), the
// ack-timeout timer on an injected clock.
//
// # Durable masters and masters that move
//
// [DurableMasterProps] is a master that owns one named Epic and journals its
// [Position] through actors/persistence (stream "pulling/<name>"): the
// longest prefix of finished items, with the Epic's cursor after it, and
// the items finished beyond it. Its Epic is a [SeekEpic] (items come with
// the cursor after each), opened by name by an [EpicOpener] on whichever
// node hosts the master, so a new activation (after a crash, on another
// node) seeks to the journaled position and skips what finished beyond it.
// Items are numbered by their place in the Epic. A worker's confirmation
// is journaled before that worker is handed its next item, so at most the
// workers' windows come round again. *messages.PullingStartEpic begins the
// Epic (idempotent, answered once durable).
//
// [RouteWorkerProps] is a worker that finds its master through an
// actors/route route instead of a fixed PID: it resolves it at start, every
// register interval and when the master terminates, and registers with
// each master it finds. A worker that registers while an Epic runs is told
// WorkAvailable at once (the seed's "add more workers on the fly").
// cluster/pullcluster makes the durable master a cluster kind and gives
// workers on any node a route to it.
//
// # Example
//
//	master, _ := pulling.MasterProps[string]()
//	mpid := sys.Root.Spawn(master)
//	worker, _ := pulling.WorkerProps(mpid, func(ctx context.Context, s string) error {
//		return send(ctx, s)
//	})
//	sys.Root.Spawn(worker)
//	stats, err := pulling.Run(ctx, sys.Root, mpid, pulling.SliceEpic(items))
package pulling
