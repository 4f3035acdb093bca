package frontend_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/frontend"
	"github.com/foreman-actors/foreman/actors/route"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/messages"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func work(id string) *messages.Work {
	return &messages.Work{WorkId: id, JobType: "square", Payload: []byte("3")}
}

func TestClient(t *testing.T) {
	t.Parallel()

	setup := func(t *testing.T, opts ...frontend.Option) (*frontend.Client, *testkit.Probe) {
		t.Helper()
		sys := testkit.NewSystem(t)
		master := testkit.NewProbe(t, sys)
		c, err := frontend.NewClient(sys, route.Fixed(master.PID()), opts...)
		require.NoError(t, err)
		return c, master
	}

	t.Run("AckedIsNil", func(t *testing.T) {
		t.Parallel()
		c, master := setup(t)
		master.SetAutoReply(func(msg any, _ *actor.PID) any {
			return &messages.Ack{WorkId: msg.(*messages.Work).GetWorkId()}
		})
		require.NoError(t, c.Submit(context.Background(), work("a")))
		master.ExpectMsg(work("a"), testkit.Timeout())
	})

	t.Run("RejectedIsTypedAndNotRetried", func(t *testing.T) {
		t.Parallel()
		c, master := setup(t, frontend.WithRetryBackoff(time.Millisecond, time.Millisecond))
		master.SetAutoReply(func(msg any, _ *actor.PID) any {
			return &messages.WorkRejected{WorkId: "a", Code: messages.RejectCode_REJECT_CODE_TOO_LARGE, Reason: "payload 2 MiB > 1 MiB"}
		})
		err := c.Submit(context.Background(), work("a"))
		require.ErrorIs(t, err, frontend.ErrRejected)
		var rej *frontend.RejectedError
		require.ErrorAs(t, err, &rej)
		require.Equal(t, messages.RejectCode_REJECT_CODE_TOO_LARGE, rej.Code)
		require.Contains(t, err.Error(), "payload 2 MiB > 1 MiB")
		master.ExpectMsg(work("a"), testkit.Timeout())
		master.ExpectNoMsg(50 * time.Millisecond)
	})

	t.Run("RetriesTimeoutsAndUnavailableUntilAcked", func(t *testing.T) {
		t.Parallel()
		c, master := setup(t, frontend.WithAskTimeout(100*time.Millisecond), frontend.WithRetryBackoff(time.Millisecond, 2*time.Millisecond))
		var n atomic.Int32
		master.SetAutoReply(func(msg any, _ *actor.PID) any {
			switch n.Add(1) {
			case 1:
				return nil // silence: the ask times out
			case 2:
				return &messages.WorkRejected{WorkId: "a", Code: messages.RejectCode_REJECT_CODE_UNAVAILABLE, Reason: "journal busy"}
			default:
				return &messages.Ack{WorkId: "a"}
			}
		})
		require.NoError(t, c.Submit(context.Background(), work("a")))
		require.Equal(t, int32(3), n.Load())
		for range 3 {
			master.ExpectMsg(work("a"), testkit.Timeout()) // the same id each time
		}
	})

	t.Run("TimeoutOnce", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t, frontend.WithAskTimeout(20*time.Millisecond))
		err := c.SubmitOnce(context.Background(), work("a"))
		require.ErrorIs(t, err, frontend.ErrTimeout)
	})

	t.Run("LateAnswerNeverReachesALaterAsk", func(t *testing.T) {
		t.Parallel()
		c, master := setup(t, frontend.WithAskTimeout(50*time.Millisecond))
		// "a" times out; its answer is sent to the same reply address only
		// after "b" was asked: "b" must get its own answer, not "a"'s.
		require.ErrorIs(t, c.SubmitOnce(context.Background(), work("a")), frontend.ErrTimeout)
		master.ExpectMsg(work("a"), testkit.Timeout())
		late := master.LastSender()
		errc := make(chan error, 1)
		go func() { errc <- c.SubmitOnce(context.Background(), work("b")) }()
		master.ExpectMsg(work("b"), testkit.Timeout())
		master.Send(late, &messages.Ack{WorkId: "a"})
		master.Send(master.LastSender(), &messages.Ack{WorkId: "b"})
		require.NoError(t, <-errc)
	})

	t.Run("ReplyAddressesServeAgain", func(t *testing.T) {
		t.Parallel()
		c, master := setup(t)
		master.SetAutoReply(func(msg any, _ *actor.PID) any {
			return &messages.Ack{WorkId: msg.(*messages.Work).GetWorkId()}
		})
		// One ask at a time: every answered ask leaves its reply address
		// for the next, so all of them reply to the same one.
		var senders []string
		for _, id := range []string{"a", "b", "c"} {
			require.NoError(t, c.SubmitOnce(context.Background(), work(id)))
			master.ExpectMsg(work(id), testkit.Timeout())
			senders = append(senders, master.LastSender().GetId())
		}
		require.Equal(t, senders[0], senders[1])
		require.Equal(t, senders[0], senders[2])
	})

	t.Run("CancelEndsTheWaitAtOnce", func(t *testing.T) {
		t.Parallel()
		c, master := setup(t, frontend.WithAskTimeout(time.Minute))
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- c.Submit(ctx, work("a")) }()
		master.ExpectMsg(work("a"), testkit.Timeout())
		cancel()
		select {
		case err := <-errc:
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(testkit.Timeout()):
			t.Fatal("Submit did not return after cancel")
		}
	})

	t.Run("DeadlineBoundsTheAsk", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t, frontend.WithAskTimeout(time.Minute))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := c.Submit(ctx, work("a"))
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("InvalidWork", func(t *testing.T) {
		t.Parallel()
		c, master := setup(t)
		require.ErrorIs(t, c.Submit(context.Background(), work("")), frontend.ErrInvalidWork)
		require.ErrorIs(t, c.Submit(context.Background(), nil), frontend.ErrInvalidWork)
		master.ExpectNoMsg(20 * time.Millisecond)
	})

	t.Run("StatusQueries", func(t *testing.T) {
		t.Parallel()
		c, master := setup(t)
		master.SetAutoReply(func(msg any, _ *actor.PID) any {
			switch m := msg.(type) {
			case *messages.GetWorkStatus:
				return &messages.WorkStatusReply{WorkId: m.GetWorkId(), Status: messages.WorkStatus_WORK_STATUS_DONE, Result: []byte("9")}
			case *messages.GetMasterStatus:
				return &messages.MasterStatus{Pending: 4}
			}
			return nil
		})
		st, err := c.WorkStatus(context.Background(), "a")
		require.NoError(t, err)
		require.Equal(t, messages.WorkStatus_WORK_STATUS_DONE, st.GetStatus())
		ms, err := c.MasterStatus(context.Background())
		require.NoError(t, err)
		require.Equal(t, int64(4), ms.GetPending())
	})

	t.Run("NoMaster", func(t *testing.T) {
		t.Parallel()
		sys := testkit.NewSystem(t)
		c, err := frontend.NewClient(sys, route.Resolver(func(context.Context) (*actor.PID, error) {
			return nil, errors.New("no backend node up")
		}))
		require.NoError(t, err)
		err = c.SubmitOnce(context.Background(), work("a"))
		require.ErrorIs(t, err, route.ErrNoMaster)
		require.Contains(t, err.Error(), "no backend node up")

		gone := sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
		require.NoError(t, sys.Root.StopFuture(gone).Wait())
		c, err = frontend.NewClient(sys, route.Fixed(gone))
		require.NoError(t, err)
		require.ErrorIs(t, c.SubmitOnce(context.Background(), work("a")), route.ErrNoMaster)
	})

	t.Run("BadOptions", func(t *testing.T) {
		t.Parallel()
		sys := testkit.NewSystem(t)
		pid := route.Fixed(sys.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {})))
		for _, o := range []frontend.Option{
			frontend.WithAskTimeout(0),
			frontend.WithRetryBackoff(0, time.Second),
			frontend.WithRetryBackoff(2*time.Second, time.Second),
			frontend.WithInterval(2*time.Second, time.Second),
			frontend.WithInitialDelay(-1),
			frontend.WithJobs(-1),
			frontend.WithConcurrency(0),
			frontend.WithRetryDelay(0),
			frontend.WithJobType(""),
			frontend.WithPayload(nil),
			frontend.WithDedupe(-1),
		} {
			_, err := frontend.NewClient(sys, pid, o)
			require.ErrorIs(t, err, frontend.ErrInvalidOption)
		}
		_, err := frontend.NewClient(sys, route.Master{})
		require.ErrorIs(t, err, frontend.ErrInvalidOption)
		_, err = frontend.ProducerProps(nil)
		require.ErrorIs(t, err, frontend.ErrInvalidOption)
		_, err = frontend.Props(route.Master{})
		require.ErrorIs(t, err, frontend.ErrInvalidOption)
	})
}

// TestClientResendsWhenTheMasterIsGone: a request in flight to a master
// whose node the route reports gone is sent again at once to the master the
// route resolves next, long before the ask timeout (an hour here), and with
// no retry backoff (an hour too): only the immediate resend can pass.
func TestClientResendsWhenTheMasterIsGone(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	dead := testkit.NewProbe(t, sys) // receives the Work, never answers
	live := testkit.NewProbe(t, sys)
	live.SetAutoReply(func(msg any, _ *actor.PID) any {
		return &messages.Ack{WorkId: msg.(*messages.Work).GetWorkId()}
	})
	var current atomic.Pointer[actor.PID]
	current.Store(dead.PID())
	watched := make(chan func(), 1)
	master := route.Resolver(
		func(context.Context) (*actor.PID, error) { return current.Load(), nil },
		route.WithAfterGone(func(pid *actor.PID, f func()) func() bool {
			if pid.Equal(dead.PID()) {
				watched <- f
			}
			return func() bool { return true }
		}),
	)
	c, err := frontend.NewClient(sys, master, frontend.WithAskTimeout(time.Hour), frontend.WithRetryBackoff(time.Hour, time.Hour))
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() { done <- c.Submit(context.Background(), work("a")) }()
	dead.ExpectMsg(work("a"), testkit.Timeout())
	var gone func()
	select {
	case gone = <-watched:
	case <-time.After(testkit.Timeout()):
		t.Fatal("the client did not watch the master it asked")
	}
	current.Store(live.PID()) // membership moved on: the next lookup finds the new master
	gone()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(testkit.Timeout()):
		t.Fatal("Submit did not send again when the master was reported gone")
	}
	live.ExpectMsg(work("a"), testkit.Timeout())

	// A second gone in a row backs off as usual (no busy loop on a route
	// that keeps resolving a dead master): Submit gives up with its ctx.
	current.Store(dead.PID())
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- c.Submit(ctx, work("b")) }()
	dead.ExpectMsg(work("b"), testkit.Timeout())
	(<-watched)()
	dead.ExpectMsg(work("b"), testkit.Timeout()) // the one immediate resend
	(<-watched)()
	dead.ExpectNoMsg(50 * time.Millisecond) // then the hour-long backoff
	cancel()
	err = <-done
	require.ErrorIs(t, err, route.ErrNoMaster)
	require.ErrorIs(t, err, context.Canceled)
}

// TestClientForgetsAMasterThatDoesNotAnswer: an ask that times out or comes
// back as a dead letter reports the PID to the route, so that a resolver
// does not hand the same PID out again from its cache.
func TestClientForgetsAMasterThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	sys := testkit.NewSystem(t)
	silent := testkit.NewProbe(t, sys) // never answers
	gone := testkit.NewProbe(t, sys)
	gonePID := gone.PID()
	require.NoError(t, sys.Root.StopFuture(gonePID).Wait())
	var current atomic.Pointer[actor.PID]
	forgot := make(chan *actor.PID, 4)
	master := route.Resolver(
		func(context.Context) (*actor.PID, error) { return current.Load(), nil },
		route.WithForget(func(pid *actor.PID) { forgot <- pid }),
	)
	c, err := frontend.NewClient(sys, master, frontend.WithAskTimeout(50*time.Millisecond))
	require.NoError(t, err)

	current.Store(silent.PID())
	err = c.SubmitOnce(context.Background(), work("a"))
	require.ErrorIs(t, err, frontend.ErrTimeout)
	require.Equal(t, silent.PID(), <-forgot)

	current.Store(gonePID)
	err = c.SubmitOnce(context.Background(), work("b"))
	require.ErrorIs(t, err, route.ErrNoMaster)
	require.Equal(t, gonePID, <-forgot)

	// A caller whose own deadline is shorter than the ask timeout reports
	// nothing: the master may be fine. (The ask's timer and ctx end
	// together, so the error is either.)
	current.Store(silent.PID())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err = c.SubmitOnce(ctx, work("c"))
	require.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, frontend.ErrTimeout), "got %v", err)
	require.Empty(t, forgot)
}
