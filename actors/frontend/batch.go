package frontend

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/messages"
)

// Limits of one WorkBatch message. A remote batch of messages travels in
// one gRPC frame whose receive limit is 4 MiB (protoactor's endpoint writer
// packs up to 1,000 queued messages into it), so a chunk stays far below it
// and only a few chunks of one call are in flight per shard.
const (
	// MaxChunkWorks is the most works in one WorkBatch.
	MaxChunkWorks = 1000
	// MaxChunkBytes is the most encoded bytes of works in one WorkBatch; a
	// single larger work travels alone.
	MaxChunkBytes = 256 << 10
	// chunksInFlight is how many chunks of one SubmitMany call each shard
	// has outstanding at once: enough to keep its journal busy while the
	// previous commit syncs, few enough to bound the remote frames.
	chunksInFlight = 4
)

// SubmitMany submits works in batches: it groups them by shard, sends each
// shard's master WorkBatch messages (at most MaxChunkWorks works or
// MaxChunkBytes each), every one made durable in one journal write and
// acknowledged in one reply. It returns one error per work, in order: nil
// once the work is durable; *RejectedError (matching ErrRejected) when the
// master refused it for good; ErrInvalidWork for a nil work or an empty id;
// or, when ctx ended first, an error matching ctx.Err() that also wraps the
// last attempt's. Timeouts, a missing master and temporary rejections are
// retried with backoff, each retry carrying only the works still pending;
// the master acknowledges an id it already accepted again, so works repeated
// in works, or retried, run once.
//
// With WithTracerProvider the batch has one foreman.submit span, and each
// work without a trace_parent of its own carries its context (or that of
// ctx's span without a tracer).
func (c *Client) SubmitMany(ctx context.Context, works []*messages.Work) []error {
	if c.tracer != nil || trace.SpanContextFromContext(ctx).IsValid() {
		var span trace.Span
		ctx, span = c.startSubmit(ctx, "", attribute.Int("foreman.works", len(works)))
		works = tracedWorks(ctx, works)
		errs := c.submitMany(ctx, works)
		endSpan(span, errors.Join(errs...))
		return errs
	}
	return c.submitMany(ctx, works)
}

// submitMany is SubmitMany without its span.
func (c *Client) submitMany(ctx context.Context, works []*messages.Work) []error {
	errs := make([]error, len(works))
	byShard := make([][]int, c.master.Shards())
	for i, w := range works {
		switch {
		case w == nil:
			errs[i] = fmt.Errorf("%w: nil work", ErrInvalidWork)
		case w.GetWorkId() == "":
			errs[i] = fmt.Errorf("%w: the work id is empty; give every job a unique id", ErrInvalidWork)
		default:
			k := route.ShardOf(w.GetWorkId(), len(byShard))
			byShard[k] = append(byShard[k], i)
		}
	}
	var wg sync.WaitGroup
	for k, idx := range byShard {
		if len(idx) == 0 {
			continue
		}
		wg.Add(1)
		go func() { // the shards side by side, each with its own window
			defer wg.Done()
			var chunkWG sync.WaitGroup
			sem := make(chan struct{}, chunksInFlight)
			for _, chunk := range chunks(works, idx) {
				sem <- struct{}{}
				chunkWG.Add(1)
				go func() {
					defer func() { <-sem; chunkWG.Done() }()
					c.submitChunk(ctx, c.master.Shard(k), works, chunk, errs)
				}()
			}
			chunkWG.Wait()
		}()
	}
	wg.Wait()
	return errs
}

// chunks splits the indexes idx of works into WorkBatch-sized runs.
func chunks(works []*messages.Work, idx []int) [][]int {
	var (
		out   [][]int
		cur   []int
		bytes int
	)
	for _, i := range idx {
		n := proto.Size(works[i])
		if len(cur) > 0 && (len(cur) == MaxChunkWorks || bytes+n > MaxChunkBytes) {
			out = append(out, cur)
			cur, bytes = nil, 0
		}
		cur = append(cur, i)
		bytes += n
	}
	return append(out, cur)
}

// submitChunk sends the works at idx to one shard's master until each is
// acknowledged, rejected for good, or ctx ends (Client.retry), each retry
// carrying only the works still pending, and records the outcomes in errs
// (each index is written by this call only).
func (c *Client) submitChunk(ctx context.Context, m route.Master, works []*messages.Work, idx []int, errs []error) {
	err := c.retry(ctx, whatText(fmt.Sprintf("submit a batch of %d works", len(idx))), func() error {
		batch := &messages.WorkBatch{Works: make([]*messages.Work, len(idx))}
		for j, i := range idx {
			batch.Works[j] = works[i]
		}
		var pending []int
		err := c.askBatch(ctx, m, batch, func(j int, o *messages.BatchOutcome) {
			i := idx[j]
			errs[i] = outcomeOf(o)
			if o.GetCode() == messages.RejectCode_REJECT_CODE_UNAVAILABLE {
				pending = append(pending, i)
			}
		})
		if err != nil {
			return err
		}
		if len(pending) == 0 {
			return nil
		}
		idx = pending
		return errs[pending[0]] // temporary: retried
	})
	if err != nil {
		for _, i := range idx {
			errs[i] = err
		}
	}
}

// askBatch makes one attempt at a WorkBatch and calls each with the
// outcome of every work, by position in the batch.
func (c *Client) askBatch(ctx context.Context, m route.Master, b *messages.WorkBatch, each func(j int, o *messages.BatchOutcome)) error {
	res, err := c.askTo(ctx, m, b, c.cfg.askTimeout)
	if err != nil {
		return err
	}
	switch r := res.(type) {
	case *messages.WorkBatchAck:
		outs := r.GetOutcomes()
		if len(outs) != len(b.GetWorks()) {
			return fmt.Errorf("%w: %d outcomes for a batch of %d", ErrUnexpectedReply, len(outs), len(b.GetWorks()))
		}
		for j, o := range outs {
			if o.GetWorkId() != b.GetWorks()[j].GetWorkId() {
				return fmt.Errorf("%w: outcome %d is for %q, not %q", ErrUnexpectedReply, j, o.GetWorkId(), b.GetWorks()[j].GetWorkId())
			}
		}
		for j, o := range outs {
			each(j, o)
		}
		return nil
	default:
		return fmt.Errorf("%w: %T answering WorkBatch", ErrUnexpectedReply, res)
	}
}
