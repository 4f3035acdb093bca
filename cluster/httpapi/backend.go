package httpapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/messages"
)

// Backend is what the HTTP server needs from the cluster. The server does not
// know how the master is reached: [ActorBackend] asks it through a
// frontend.Client (fixed PID or cluster resolver); tests or other transports
// may plug in their own.
//
// Errors should wrap ErrInvalid, ErrTooLarge, ErrNotFound or ErrUnavailable
// so the server can pick the status code; anything else is a 500.
// Implementations must be safe for concurrent use.
type Backend interface {
	// Submit returns nil once w is durable (acknowledged by the master). It
	// retries until ctx ends; a work id already accepted is acknowledged
	// again and does not run twice.
	Submit(ctx context.Context, w *messages.Work) error
	// WorkStatus asks the master about one work. An unknown id is a reply
	// with WORK_STATUS_UNKNOWN or an error wrapping ErrNotFound.
	WorkStatus(ctx context.Context, id string) (*messages.WorkStatusReply, error)
	// Status returns the cluster overview. A master that does not answer
	// is reported in StatusInfo.Master, not as an error, so the members
	// are still shown.
	Status(ctx context.Context) (*StatusInfo, error)
}

// MembersFunc lists the cluster's members for /status. A cluster-backed node
// reads its membership; [LocalMembers] reports an all-in-one process.
type MembersFunc func(ctx context.Context) ([]Member, error)

// LocalMembers reports one member: this process, with its actor system's id
// and address, marked Self, with the given roles (default RoleAll).
func LocalMembers(sys *actor.ActorSystem, roles ...string) MembersFunc {
	if len(roles) == 0 {
		roles = []string{RoleAll}
	}
	roles = slices.Clone(roles)
	return func(context.Context) ([]Member, error) {
		return []Member{{ID: sys.ID, Address: sys.Address(), Roles: slices.Clone(roles), Self: true}}, nil
	}
}

// ActorBackend implements Backend over the real actors: a frontend.Client
// reaching the master (by PID or through the cluster) and a MembersFunc.
type ActorBackend struct {
	client     *frontend.Client
	members    MembersFunc
	throttlers ThrottlersFunc // nil: none reported
}

// throttlerLookupTimeout bounds how long GET /status looks for throttlers.
const throttlerLookupTimeout = time.Second

// ThrottlersFunc says where each cluster-wide rate limit's throttler runs,
// for /status (in a cluster: node.ClusterNode.Throttlers).
type ThrottlersFunc func(ctx context.Context) []ThrottlerInfo

// BackendOption configures an ActorBackend.
type BackendOption func(*ActorBackend)

// WithThrottlers makes GET /status list the throttlers f reports.
func WithThrottlers(f ThrottlersFunc) BackendOption {
	return func(b *ActorBackend) { b.throttlers = f }
}

var _ Backend = (*ActorBackend)(nil)

// NewActorBackend returns a Backend that submits and queries through client
// and lists members with members (nil: no members).
func NewActorBackend(client *frontend.Client, members MembersFunc, opts ...BackendOption) (*ActorBackend, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil frontend client", ErrInvalidOption)
	}
	if members == nil {
		members = func(context.Context) ([]Member, error) { return nil, nil }
	}
	b := &ActorBackend{client: client, members: members}
	for _, o := range opts {
		o(b)
	}
	return b, nil
}

// Submit sends w until the master acknowledges it; see Backend.Submit. The
// master's rejections map to ErrTooLarge or ErrInvalid; a master that did
// not acknowledge before ctx ended maps to ErrUnavailable.
func (b *ActorBackend) Submit(ctx context.Context, w *messages.Work) error {
	if err := b.client.Submit(ctx, w); err != nil {
		return b.submitErr(ctx, w, err)
	}
	return nil
}

// BatchBackend is a Backend that submits many works at once: POST
// /work/batch uses it when the backend offers it, else one Submit per item.
type BatchBackend interface {
	// SubmitMany returns one error per work, in order, each as Submit
	// would return it for that work alone.
	SubmitMany(ctx context.Context, works []*messages.Work) []error
}

// SubmitMany sends works to their masters in batches (one journal write
// and one reply per batch; see frontend.Client.SubmitMany) and maps each
// outcome as Submit does.
func (b *ActorBackend) SubmitMany(ctx context.Context, works []*messages.Work) []error {
	errs := b.client.SubmitMany(ctx, works)
	for i, err := range errs {
		if err != nil {
			errs[i] = b.submitErr(ctx, works[i], err)
		}
	}
	return errs
}

// submitErr maps a failed submission to the API's errors.
func (b *ActorBackend) submitErr(ctx context.Context, w *messages.Work, err error) error {
	var rej *frontend.RejectedError
	switch {
	case errors.As(err, &rej):
		switch rej.Code {
		case messages.RejectCode_REJECT_CODE_TOO_LARGE:
			return fmt.Errorf("%w: %s", ErrTooLarge, rej.Reason)
		case messages.RejectCode_REJECT_CODE_UNAVAILABLE:
			return fmt.Errorf("%w: %s", ErrUnavailable, rej.Reason)
		default:
			return fmt.Errorf("%w: %s", ErrInvalid, rej.Reason)
		}
	case errors.Is(err, frontend.ErrDuplicate):
		return err // answered 200 with the job that holds the key (keys.go)
	case errors.Is(err, frontend.ErrInvalidWork):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	case ctx.Err() != nil, errors.Is(err, frontend.ErrTimeout), errors.Is(err, route.ErrNoMaster):
		return fmt.Errorf("%w: the master did not acknowledge work %q in time; retry with the same id (%w)", ErrUnavailable, w.GetWorkId(), err)
	default:
		return fmt.Errorf("%w: %w", ErrServer, err)
	}
}

// WorkStatus asks the master about one work; see Backend.WorkStatus.
func (b *ActorBackend) WorkStatus(ctx context.Context, id string) (*messages.WorkStatusReply, error) {
	r, err := b.client.WorkStatus(ctx, id)
	if err != nil {
		return nil, b.queryErr(ctx, err)
	}
	return r, nil
}

// Status lists the members and asks the master for its counts; see
// Backend.Status. The member whose Address is the master's is marked Master.
func (b *ActorBackend) Status(ctx context.Context) (*StatusInfo, error) {
	members, err := b.members(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: listing members: %w", ErrUnavailable, err)
	}
	info := &StatusInfo{Members: members}
	if info.Members == nil {
		info.Members = []Member{}
	}
	if b.throttlers != nil {
		// Alongside the masters' answers, and for at most a second: a
		// throttler on a node that just died is not found until the
		// membership says so, and the masters' state matters more.
		found := make(chan []ThrottlerInfo, 1)
		tctx, cancel := context.WithTimeout(ctx, throttlerLookupTimeout)
		defer cancel()
		go func() { found <- b.throttlers(tctx) }()
		defer func() {
			info.Throttlers = <-found
			for i := range info.Throttlers {
				for _, m := range info.Members {
					if m.Address != "" && m.Address == info.Throttlers[i].Address {
						info.Throttlers[i].Member = m.ID
					}
				}
			}
		}()
	}
	if b.client.Shards() > 1 {
		b.shardStatus(ctx, info)
		return info, nil
	}
	ms, err := b.client.MasterStatus(ctx)
	if err != nil {
		info.Master.Error = b.queryErr(ctx, err).Error()
		return info, nil
	}
	info.Master, info.Queue, info.Workers = masterInfo(ms)
	for i := range info.Members {
		if info.Members[i].Address == info.Master.Address {
			info.Members[i].Master = true
			if info.Master.Member == "" {
				info.Master.Member = info.Members[i].ID
			}
		}
	}
	return info, nil
}

// shardStatus fills info from every shard's master: each in info.Shards,
// shard 0's as info.Master, the sums of the others' counts in Queue and
// Workers; members hosting any shard's master are marked Master.
func (b *ActorBackend) shardStatus(ctx context.Context, info *StatusInfo) {
	hosts := map[string]bool{}
	for _, st := range b.client.ShardStatus(ctx) {
		si := ShardInfo{Shard: st.Shard}
		if st.Err != nil {
			si.Master.Error = b.queryErr(ctx, st.Err).Error()
		} else {
			si.Master, si.Queue, si.Workers = masterInfo(st.Status)
			hosts[si.Master.Address] = true
			q := &info.Queue
			q.Pending += si.Queue.Pending
			q.InProgress += si.Queue.InProgress
			q.Done += si.Queue.Done
			q.Dead += si.Queue.Dead
			q.Cancelled += si.Queue.Cancelled
			q.AcceptedTotal += si.Queue.AcceptedTotal
			info.Workers.Idle += si.Workers.Idle
			info.Workers.Busy += si.Workers.Busy
		}
		info.Shards = append(info.Shards, si)
	}
	for i := range info.Shards {
		for j := range info.Members {
			if info.Shards[i].Master.Address != "" && info.Members[j].Address == info.Shards[i].Master.Address {
				info.Shards[i].Master.Member = info.Members[j].ID
			}
		}
	}
	for i := range info.Members {
		info.Members[i].Master = hosts[info.Members[i].Address]
	}
	if len(info.Shards) > 0 {
		info.Master = info.Shards[0].Master
	}
}

// masterInfo maps a master's status to the API's.
func masterInfo(ms *messages.MasterStatus) (MasterInfo, QueueInfo, WorkersInfo) {
	return MasterInfo{Reachable: true, Address: ms.GetAddress(), Epoch: ms.GetEpoch()},
		QueueInfo{
			Pending:       ms.GetPending(),
			InProgress:    ms.GetInProgress(),
			Done:          ms.GetDone(),
			Dead:          ms.GetDead(),
			Cancelled:     ms.GetCancelled(),
			AcceptedTotal: ms.GetAcceptedTotal(),
		},
		WorkersInfo{Idle: ms.GetIdleWorkers(), Busy: ms.GetBusyWorkers()}
}

// queryErr maps a failed one-shot query to the API's errors.
func (b *ActorBackend) queryErr(ctx context.Context, err error) error {
	var rej *frontend.RejectedError
	if errors.As(err, &rej) && rej.Temporary() {
		return fmt.Errorf("%w: %s", ErrUnavailable, rej.Reason) // the master is recovering
	}
	if ctx.Err() != nil || errors.Is(err, frontend.ErrTimeout) || errors.Is(err, route.ErrNoMaster) {
		return fmt.Errorf("%w: the master did not answer in time (%w)", ErrUnavailable, err)
	}
	return fmt.Errorf("%w: %w", ErrServer, err)
}
