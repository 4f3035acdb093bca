package main

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// highWater is the largest mailbox depth seen by any actor made with its
// mailbox: the seed's point is that it stays bounded (by the workers'
// windows) however many recipients there are.
type highWater struct{ max atomic.Int64 }

func (h *highWater) observe(n int64) {
	for {
		cur := h.max.Load()
		if n <= cur || h.max.CompareAndSwap(cur, n) {
			return
		}
	}
}

// Max returns the largest depth seen.
func (h *highWater) Max() int64 { return h.max.Load() }

// mailbox returns a producer of unbounded mailboxes that report their depth
// to h (one counter per mailbox: protoactor shares a middleware among all
// the mailboxes of a producer).
func (h *highWater) mailbox() actor.MailboxProducer {
	return func() actor.Mailbox { return actor.Unbounded(&depth{hw: h})() }
}

// depth is one mailbox's user and system messages posted and not yet
// received.
type depth struct {
	hw *highWater
	n  atomic.Int64
}

func (d *depth) MailboxStarted()     {}
func (d *depth) MessagePosted(any)   { d.hw.observe(d.n.Add(1)) }
func (d *depth) MessageReceived(any) { d.n.Add(-1) }
func (d *depth) MailboxEmpty()       {}

var _ actor.MailboxMiddleware = (*depth)(nil)
