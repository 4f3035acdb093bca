package pulling_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/foreman-actors/foreman/actors/pulling"
	"github.com/foreman-actors/foreman/actors/testkit"
)

// memberEnv, when set, turns the test binary into cluster member B:
// "masterAddress|masterID|recorderAddress|recorderID".
const memberEnv = "PULLING_TEST_MEMBER_B"

// runMemberB is member B, a separate process: three workers (window 4) pull
// from the master on member A and report every item they finish to A's
// recorder. It exits when its stdin closes (the parent test ended) or after
// a minute, whichever is first; the test kills it mid-run.
func runMemberB(spec string) int {
	parts := strings.Split(spec, "|")
	if len(parts) != 4 {
		fmt.Fprintf(os.Stderr, "%s=%q: want 4 fields separated by |\n", memberEnv, spec)
		return 2
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	r := remote.NewRemote(sys, remote.Configure("127.0.0.1", 0))
	r.Start()
	master := actor.NewPID(parts[0], parts[1])
	recorder := actor.NewPID(parts[2], parts[3])
	for range 3 {
		props, err := pulling.WorkerProps(master, func(_ context.Context, item int) error {
			time.Sleep(200 * time.Microsecond) // simulated work
			sys.Root.Send(recorder, wrapperspb.Int64(int64(item)))
			return nil
		}, pulling.WithCodec(pulling.JSONCodec[int]()), pulling.WithWindow(4))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		sys.Root.Spawn(props)
	}
	fmt.Println("ready")
	done := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
	}
	return 0
}

// TestWorkersOnTwoMembersOneStops runs one master on member A (this
// process) with two local workers, and three workers on member B (a child
// process). Member B is killed (SIGKILL) while its workers hold items: every
// item is still processed at least once, none is lost, and B's workers are
// forgotten.
func TestWorkersOnTwoMembersOneStops(t *testing.T) {
	t.Parallel()
	sysA := testkit.NewSystem(t, testkit.WithDiscardLogs())
	testkit.StartRemote(t, sysA)

	codec := pulling.WithCodec(pulling.JSONCodec[int]())
	// The ack timeout is far beyond the test's bound: re-delivery must come
	// from watching B's workers, not from timeouts.
	master := spawnMaster[int](t, sysA, codec, pulling.WithBatchSize(100), pulling.WithAckTimeout(10*time.Minute))

	const n = 3000
	var seen processed
	var mu sync.Mutex
	onB := 0
	reachedB := make(chan struct{})
	recorder := sysA.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if v, ok := c.Message().(*wrapperspb.Int64Value); ok {
			seen.add(int(v.GetValue()))
			mu.Lock()
			onB++
			if onB == 100 {
				close(reachedB)
			}
			mu.Unlock()
		}
	}))
	for range 2 {
		props, err := pulling.WorkerProps(master, func(_ context.Context, item int) error {
			time.Sleep(200 * time.Microsecond) // simulated work
			seen.add(item)
			return nil
		}, codec)
		require.NoError(t, err)
		sysA.Root.Spawn(props)
	}

	// Member B.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memberEnv+"="+strings.Join(
		[]string{master.Address, master.Id, recorder.Address, recorder.Id}, "|"))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill() // our own child, by PID
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)

	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	type result struct {
		st  pulling.Stats
		err error
	}
	res := make(chan result, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		st, err := pulling.Run(ctx, sysA.Root, master, pulling.SliceEpic(items))
		res <- result{st, err}
	}()

	select {
	case <-reachedB:
	case <-time.After(5 * testkit.Timeout()):
		t.Fatal("member B processed fewer than 100 items")
	}
	st, err := pulling.Progress(ctx, sysA.Root, master)
	require.NoError(t, err)
	require.Equal(t, 5, st.Workers, "2 workers on A and 3 on B registered")
	require.NoError(t, cmd.Process.Kill()) // member B crashes
	_ = cmd.Wait()

	r := <-res
	require.NoError(t, r.err)
	require.Equal(t, n, seen.distinct(), "every item processed at least once")
	require.Equal(t, uint64(n), r.st.Confirmed)
	require.Positive(t, r.st.Redelivered, "B's items were handed out again")
	require.Equal(t, 2, r.st.Workers, "B's workers were forgotten")
	mu.Lock()
	t.Logf("stats: %+v, processed on B: %d", r.st, onB)
	mu.Unlock()
}
