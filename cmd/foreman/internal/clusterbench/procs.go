package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a child process whose stderr is copied to a log file, line by
// line, each line offered to the watchers first.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}

	mu       sync.Mutex
	lines    []string // the first maxKept lines, for waitLine
	watchers []func(at time.Time, line string)
}

// maxKept bounds the lines a proc keeps in memory.
const maxKept = 100000

// startProc runs bin with args, logging to dir/name.log.
func startProc(dir, name, bin string, args ...string) (*proc, error) {
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout = f
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	if err := p.cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting %s: %w", name, err), f.Close())
	}
	go func() {
		p.copy(stderr, f)
		_ = p.cmd.Wait()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "clusterbench: %s log: %v\n", name, err)
		}
		close(p.done)
	}()
	return p, nil
}

func (p *proc) copy(r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		at, line := time.Now(), sc.Text()
		p.mu.Lock()
		ws := p.watchers
		if len(p.lines) < maxKept {
			p.lines = append(p.lines, line)
		}
		p.mu.Unlock()
		for _, fn := range ws {
			fn(at, line)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			// Keep draining the pipe, so the process never blocks on a
			// full stderr; its log file misses the rest.
			fmt.Fprintf(os.Stderr, "clusterbench: %s log: %v\n", p.name, err)
			w = io.Discard
		}
	}
	_, _ = io.Copy(w, r)
}

// watch calls fn for every later line of the process's log.
func (p *proc) watch(fn func(at time.Time, line string)) {
	p.mu.Lock()
	p.watchers = append(p.watchers, fn)
	p.mu.Unlock()
}

// waitLine waits up to d for a line containing substr (logged so far or
// later).
func (p *proc) waitLine(substr string, d time.Duration) error {
	ch := make(chan struct{}, 1)
	signal := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	p.mu.Lock()
	for _, l := range p.lines {
		if strings.Contains(l, substr) {
			signal()
		}
	}
	p.watchers = append(p.watchers, func(_ time.Time, line string) {
		if strings.Contains(line, substr) {
			signal()
		}
	})
	p.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-p.done:
		return fmt.Errorf("%s exited before logging %q (see its log)", p.name, substr)
	case <-time.After(d):
		return fmt.Errorf("%s did not log %q within %v (see its log)", p.name, substr, d)
	}
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop(grace)
		}()
	}
	wg.Wait()
}

// epochOf returns the epoch of a "master recovered" line.
func epochOf(line string) (int, bool) {
	if !strings.Contains(line, `msg="master recovered"`) {
		return 0, false
	}
	return intField(line, "epoch")
}

// intField reads key=N from a slog text line.
func intField(line, key string) (int, bool) {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		return 0, false
	}
	rest := line[i+len(key)+2:]
	if j := strings.IndexByte(rest, ' '); j >= 0 {
		rest = rest[:j]
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// stringField reads key=V from a slog text line.
func stringField(line, key string) string {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		return ""
	}
	rest := line[i+len(key)+2:]
	if j := strings.IndexByte(rest, ' '); j >= 0 {
		rest = rest[:j]
	}
	return rest
}
