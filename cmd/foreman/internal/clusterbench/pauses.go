package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/foreman-actors/foreman/cluster/node"
)

// runPauses measures how often failure detection drops a healthy member by
// mistake: two backends and a worker node run while this program keeps
// both cores busy, and one backend is stopped (SIGSTOP) for a short pause
// and continued (SIGCONT), again and again, like a stop-the-world pause on
// a loaded machine. Every "member down" that another node logs for the
// paused backend is a false drop.
func runPauses(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pauses", flag.ExitOnError)
	var c common
	c.register(fs)
	n := fs.Int("pauses", 30, "number of pauses")
	pause := fs.Duration("pause", 100*time.Millisecond, "length of one pause (SIGSTOP to SIGCONT)")
	every := fs.Duration("every", time.Second, "time from one pause to the next")
	burn := fs.Int("burn", runtime.NumCPU(), "busy goroutines in this process keeping the cores loaded (0: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	if c.isPostgres() || c.membershipName() != node.MembershipSeeds {
		return errors.New("pauses measures the seed membership's pause tolerance on a SQLite journal: leave -journal and -membership at their defaults")
	}
	dir, cleanup, err := c.workdir()
	if err != nil {
		return err
	}
	defer cleanup()

	var procs []*proc
	defer func() { stopAll(procs, 10*time.Second) }()
	for i := range 2 {
		port := c.base + i
		p, err := startProc(dir, fmt.Sprintf("backend-%d", port), c.foreman, strconv.Itoa(port),
			"--seeds", c.seeds(), "--data", dir+"/data", "--log-level", "info")
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	w, err := startProc(dir, "worker", c.foreman, "0", "--seeds", c.seeds(), "--delay", "0", "--log-level", "info")
	if err != nil {
		return err
	}
	procs = append(procs, w)
	for _, p := range procs {
		if err := p.waitLine("membership started", 30*time.Second); err != nil {
			return err
		}
	}
	// The master is activated by the workers' registrations; pause the
	// backend that hosts it, whose lease is the one a pause endangers.
	hostIdx := -1
	for i, p := range procs[:2] {
		if p.waitLine(`msg="master recovered"`, 5*time.Second) == nil {
			hostIdx = i
			break
		}
	}
	if hostIdx < 0 {
		return fmt.Errorf("no backend logged \"master recovered\" within 10 s (see the logs with -keep)")
	}
	target, other := procs[hostIdx], procs[1-hostIdx]
	targetAddr := fmt.Sprintf("address=127.0.0.1:%d", c.base+hostIdx)
	// Let the views converge before counting.
	time.Sleep(2 * time.Second)

	var downs, ups, masters atomic.Int64
	for _, p := range procs[:2] {
		p.watch(func(_ time.Time, line string) {
			if strings.Contains(line, `msg="master recovered"`) {
				masters.Add(1)
			}
		})
	}
	for _, p := range []*proc{other, w} {
		p.watch(func(_ time.Time, line string) {
			if !strings.Contains(line, targetAddr) {
				return
			}
			switch {
			case strings.Contains(line, `msg="member down"`):
				downs.Add(1)
			case strings.Contains(line, `msg="member up`):
				ups.Add(1)
			}
		})
	}

	burnCtx, stopBurn := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range *burn {
		wg.Go(func() {
			x := uint64(1)
			for burnCtx.Err() == nil {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
			_ = x
		})
	}
	defer func() {
		stopBurn()
		wg.Wait()
	}()

	pid := target.cmd.Process.Pid
	start := time.Now()
	for i := range *n {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return fmt.Errorf("SIGSTOP %d: %w", pid, err)
		}
		time.Sleep(*pause)
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			return fmt.Errorf("SIGCONT %d: %w", pid, err)
		}
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * *every)))
	}
	time.Sleep(2 * time.Second) // drops noticed late still count
	fmt.Printf("pauses: %d pauses of %v every %v, %d busy goroutines in the bench process, target: backend %d, hosting the master\n",
		*n, *pause, *every, *burn, c.base+hostIdx)
	fmt.Printf("false drops: %d of %d chances (each pause, as seen by each of the 2 observers: the other backend and the worker node); re-admissions: %d\n",
		downs.Load(), 2**n, ups.Load())
	fmt.Printf("master activations during the pauses (a lease lost to a pause, or a move): %d\n", masters.Load())
	return nil
}
