//go:build !race

package pullcluster_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/pulling"
	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cluster/journal"
	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/cluster/pullcluster"
)

// memberEnv, when set, turns the test binary into a member process that
// hosts the Epic master kind: "journal path|seed" (seed empty for the
// first member).
const memberEnv = "PULLCLUSTER_TEST_MEMBER"

const processItems = 3000

func init() {
	spec, ok := os.LookupEnv(memberEnv)
	if !ok {
		return
	}
	os.Exit(runMember(spec))
}

// runMember is a member process: it hosts the master of Epic "numbers"
// (3,000 ints) over the SQLite journal at path, prints "member HTTPADDR
// ADDRESS" and runs until its stdin closes or it is killed.
func runMember(spec string) int {
	path, seed, ok := strings.Cut(spec, "|")
	if !ok {
		fmt.Fprintf(os.Stderr, "%s=%q: want \"journal|seed\"\n", memberEnv, spec)
		return 2
	}
	j, err := journal.OpenSQLite(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts := []membership.Option{membership.WithHTTPAddr("127.0.0.1:0"), membership.WithLogger(testLogger())}
	if seed != "" {
		opts = append(opts, membership.WithSeedHTTP(seed))
	}
	prov, err := membership.New(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	items := make([]int, processItems)
	for i := range items {
		items[i] = i
	}
	open := func(context.Context, string) (pulling.SeekEpic[int], error) { return pulling.SliceSeekEpic(items), nil }
	master := pullcluster.EpicMaster(j, open, pulling.WithCodec(pulling.JSONCodec[int]()), pulling.WithBatchSize(100))
	n, err := pullcluster.Join(context.Background(), pullcluster.Config{Provider: prov, Member: true, Master: master, Logger: testLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("member %s %s\n", prov.HTTPAddr(), n.Address())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = n.Stop(context.Background())
	_ = j.Close()
	return 0
}

type memberProc struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	httpAddr string
	address  string
}

func startMember(t *testing.T, path, seed string) *memberProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), memberEnv+"="+path+"|"+seed)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &memberProc{cmd: cmd, stdin: stdin}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "member process did not start")
	_, err = fmt.Sscanf(line, "member %s %s", &p.httpAddr, &p.address)
	require.NoError(t, err, "member line %q", line)
	return p
}

// TestClusterEpicSurvivesMasterProcessKill is the crash case with real
// processes: two member processes host the Epic master kind over one SQLite
// journal file; this process is a client with 3 workers of window 2. The
// member process hosting the master is SIGKILLed a third of the way
// through, so its lease is not released: the other member's activation
// waits for it to lapse (at most its ttl), resumes from the journaled
// position, and at most the workers' windows are worked on twice.
func TestClusterEpicSurvivesMasterProcessKill(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes: skipped with -short")
	}
	const workers, window = 3, 2
	path := t.TempDir() + "/journal.db"
	a := startMember(t, path, "")
	b := startMember(t, path, a.httpAddr)
	h := &harness{t: t, seed: a.httpAddr}
	client := h.join(pullcluster.Config{})

	var mu sync.Mutex
	seen := map[int]int{}
	var total atomic.Int64
	do := func(_ context.Context, item int) error {
		mu.Lock()
		seen[item]++
		mu.Unlock()
		total.Add(1)
		time.Sleep(500 * time.Microsecond)
		return nil
	}
	for range workers {
		props, err := pullcluster.WorkerProps(client, "numbers", do, pulling.WithCodec(pulling.JSONCodec[int]()),
			pulling.WithWindow(window), pulling.WithRegisterInterval(200*time.Millisecond))
		require.NoError(t, err)
		client.System().Root.Spawn(props)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*testkit.Timeout())
	defer cancel()
	_, err := client.Start(ctx, "numbers")
	require.NoError(t, err)

	require.Eventually(t, func() bool { return total.Load() >= processItems/3 }, 4*testkit.Timeout(), time.Millisecond)
	host, err := client.Route("numbers").Resolve(ctx)
	require.NoError(t, err)
	victim := a
	if host.GetAddress() == b.address {
		victim = b
	}
	require.NoError(t, victim.cmd.Process.Kill())
	killedAt, killed := total.Load(), time.Now()

	final, err := client.Wait(ctx, "numbers", 50*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, uint64(processItems), final.GetFinished())
	mu.Lock()
	defer mu.Unlock()
	resent := 0
	for i := range processItems {
		require.Positive(t, seen[i], "item %d was never worked on", i)
		resent += seen[i] - 1
	}
	require.LessOrEqual(t, resent, workers*window, "only the items the workers held come round again")
	t.Logf("SIGKILLed the master's process after %d items; done %s later; %d worked on twice (bound %d)",
		killedAt, time.Since(killed).Round(time.Millisecond), resent, workers*window)
}
