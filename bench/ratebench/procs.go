package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a foreman child process whose stderr (its log) is copied to a
// file, each line also kept in memory so waitLine can look for it.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}

	mu    sync.Mutex
	lines []string
	wake  chan struct{} // closed and replaced on every new line
}

// maxKept bounds the lines a proc keeps in memory.
const maxKept = 200000

// startProc runs bin with args, logging to dir/name.log.
func startProc(dir, name, bin string, args ...string) (*proc, error) {
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("log of %s: %w", name, err)
	}
	p := &proc{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{}), wake: make(chan struct{})}
	p.cmd.Stdout = f
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	if err := p.cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting %s: %w", name, err), f.Close())
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			if len(p.lines) < maxKept {
				p.lines = append(p.lines, line)
			}
			close(p.wake)
			p.wake = make(chan struct{})
			p.mu.Unlock()
			_, _ = fmt.Fprintln(f, line)
		}
		_, _ = io.Copy(f, stderr)
		_ = p.cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// waitLine waits up to d for a line containing every one of substrs.
func (p *proc) waitLine(d time.Duration, substrs ...string) error {
	deadline := time.After(d)
	seen := 0
	for {
		p.mu.Lock()
		for ; seen < len(p.lines); seen++ {
			if containsAll(p.lines[seen], substrs) {
				p.mu.Unlock()
				return nil
			}
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-p.done:
			return fmt.Errorf("%s exited before logging %q (see its log)", p.name, substrs)
		case <-deadline:
			return fmt.Errorf("%s did not log %q within %v (see its log)", p.name, substrs, d)
		}
	}
}

func containsAll(line string, substrs []string) bool {
	for _, s := range substrs {
		if !strings.Contains(line, s) {
			return false
		}
	}
	return true
}

// kill sends SIGKILL and waits until the process is gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
}

// stopAll stops the processes concurrently.
func stopAll(ps []*proc, grace time.Duration) {
	var wg sync.WaitGroup
	for _, p := range ps {
		if p == nil {
			continue
		}
		wg.Go(func() { p.stop(grace) })
	}
	wg.Wait()
}
