// Package cpustat measures the CPU time processes spend over a benchmark's
// measured phase, so that `foreman bench` can print CPU per job for each
// process beside jobs/s: this process (getrusage), a local process and its
// descendants by PID (/proc/PID/stat), or a node by scraping the
// process_cpu_seconds_total its --metrics listener exposes. CPU per job stays
// put across machines and neighbours where jobs/s does not, which is why the
// figures are taken per process.
package cpustat

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// UserHZ is the unit of the times in /proc/PID/stat: Linux reports them in
// USER_HZ ticks, 100 a second on every architecture (the kernel's ABI, not
// its CONFIG_HZ), so one tick is 10 ms.
const UserHZ = 100

// tick is one USER_HZ tick.
const tick = time.Second / UserHZ

// ErrStat marks a /proc/PID/stat or a metrics page that could not be read
// or parsed.
var ErrStat = errors.New("cpustat: cannot read the CPU time")

// Stat holds the fields of /proc/PID/stat that CPU accounting needs, in
// USER_HZ ticks: the process's own user and system time, and those of its
// children it has waited for (a reaped child's time moves there).
type Stat struct {
	PID, PPID                    int
	UTime, STime, CUTime, CSTime uint64
}

// Own is the process's own CPU time.
func (s Stat) Own() time.Duration { return time.Duration(s.UTime+s.STime) * tick }

// WithReaped is the process's own CPU time plus its reaped children's.
func (s Stat) WithReaped() time.Duration {
	return time.Duration(s.UTime+s.STime+s.CUTime+s.CSTime) * tick
}

// ParseStat parses the contents of /proc/PID/stat. The command name (field
// 2) is in parentheses and may hold spaces and parentheses itself, so the
// fields are counted from the last ')'.
func ParseStat(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return Stat{}, fmt.Errorf("%w: %q is not a /proc/PID/stat line (no \"(comm)\")", ErrStat, short(b))
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return Stat{}, fmt.Errorf("%w: pid field %q: %w", ErrStat, b[:open], err)
	}
	// After ')': field 3 (state) is rest[0], so field N is rest[N-3].
	rest := strings.Fields(string(b[end+1:]))
	if len(rest) < 15 {
		return Stat{}, fmt.Errorf("%w: %q has %d fields after the command name, want at least 15", ErrStat, short(b), len(rest))
	}
	s := Stat{PID: pid}
	if s.PPID, err = strconv.Atoi(rest[1]); err != nil {
		return Stat{}, fmt.Errorf("%w: ppid %q: %w", ErrStat, rest[1], err)
	}
	for i, dst := range []*uint64{&s.UTime, &s.STime, &s.CUTime, &s.CSTime} {
		v, err := strconv.ParseInt(rest[11+i], 10, 64) // cutime and cstime are signed in proc(5)
		if err != nil || v < 0 {
			return Stat{}, fmt.Errorf("%w: field %d %q is not a tick count", ErrStat, 14+i, rest[11+i])
		}
		*dst = uint64(v)
	}
	return s, nil
}

func short(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// TreeCPU sums the CPU time of process pid and every live descendant of
// it, each with its reaped children's time, from the stat files under proc
// (normally "/proc"). A server that forks a process per connection
// (PostgreSQL) is measured whole this way: a backend alive at both samples
// counts in both, one that exited in between has moved into its parent's
// reaped time. Processes that vanish during the scan are skipped.
func TreeCPU(proc string, pid int) (time.Duration, error) {
	root, err := readStat(filepath.Join(proc, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir(proc)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrStat, err)
	}
	children := map[int][]Stat{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		s, err := readStat(filepath.Join(proc, e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile, or not a process
		}
		children[s.PPID] = append(children[s.PPID], s)
	}
	total := root.WithReaped()
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			total += c.WithReaped()
			queue = append(queue, c.PID)
		}
	}
	return total, nil
}

func readStat(path string) (Stat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, fmt.Errorf("%w: %w", ErrStat, err)
	}
	return ParseStat(b)
}

// SelfCPU is this process's CPU time so far (user and system, all
// threads), from getrusage: microsecond resolution, finer than /proc.
func SelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("%w: getrusage: %w", ErrStat, err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// MetricName is the Prometheus process collector's CPU counter, which
// every node's --metrics listener exposes.
const MetricName = "process_cpu_seconds_total"

// ParseMetric finds the value of the unlabelled sample name in a
// Prometheus text exposition.
func ParseMetric(r io.Reader, name string) (float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
			continue // a comment, another metric, or name as a prefix of a longer one
		}
		f := strings.Fields(rest)
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %s value %q: %w", ErrStat, name, f[0], err)
		}
		return v, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("%w: reading the metrics: %w", ErrStat, err)
	}
	return 0, fmt.Errorf("%w: no %s sample in the metrics (is this a node's --metrics listener?)", ErrStat, name)
}

// Source is one process whose CPU time is sampled.
type Source struct {
	// Name labels the process in the output ("backend", "redis-server").
	Name string
	read func(ctx context.Context) (time.Duration, error)
}

// Self samples this process.
func Self(name string) Source {
	return Source{Name: name, read: func(context.Context) (time.Duration, error) { return SelfCPU() }}
}

// PID samples a local process and its descendants from /proc.
func PID(name string, pid int) Source {
	return Source{Name: name, read: func(context.Context) (time.Duration, error) { return TreeCPU("/proc", pid) }}
}

// Metrics samples a node by scraping process_cpu_seconds_total from url
// (its --metrics listener's /metrics) with client (nil: a default one).
func Metrics(name, url string, client *http.Client) Source {
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	return Source{Name: name, read: func(ctx context.Context) (time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, fmt.Errorf("%w: %w", ErrStat, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, fmt.Errorf("%w: scraping %s: %w", ErrStat, url, err)
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%w: scraping %s: %s", ErrStat, url, resp.Status)
		}
		v, err := ParseMetric(resp.Body, MetricName)
		return time.Duration(v * float64(time.Second)), err
	}}
}

// ParseSource reads a --cpu-of value: NAME=PID (a local process and its
// descendants) or NAME=URL (a node's metrics: http://host:port, /metrics
// added when no path is given).
func ParseSource(s string) (Source, error) {
	name, what, ok := strings.Cut(s, "=")
	if !ok || name == "" || what == "" {
		return Source{}, fmt.Errorf("%q is not NAME=PID or NAME=URL (e.g. backend=4242 or backend=http://127.0.0.1:9100)", s)
	}
	if pid, err := strconv.Atoi(what); err == nil {
		if pid < 1 {
			return Source{}, fmt.Errorf("%q: a PID is >= 1", s)
		}
		return PID(name, pid), nil
	}
	if !strings.HasPrefix(what, "http://") && !strings.HasPrefix(what, "https://") {
		return Source{}, fmt.Errorf("%q: %q is neither a PID nor an http:// URL of a node's metrics", s, what)
	}
	if i := strings.Index(what[len("http://"):], "/"); i < 0 || strings.HasSuffix(what, "/") {
		what = strings.TrimSuffix(what, "/") + "/metrics"
	}
	return Metrics(name, what, nil), nil
}

// Usage is one process's CPU time over a measured phase.
type Usage struct {
	Name string
	CPU  time.Duration
}

// PerJob is the CPU time per job in microseconds.
func (u Usage) PerJob(jobs int) float64 {
	if jobs <= 0 {
		return 0
	}
	return float64(u.CPU) / float64(time.Microsecond) / float64(jobs)
}

// Meter samples its sources at the start and the end of a phase.
type Meter struct {
	sources []Source
	start   []time.Duration
}

// NewMeter measures sources (in this order in the output).
func NewMeter(sources ...Source) *Meter { return &Meter{sources: sources} }

// Start takes the first sample of every source.
func (m *Meter) Start(ctx context.Context) error {
	m.start = make([]time.Duration, len(m.sources))
	for i, s := range m.sources {
		v, err := s.read(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		m.start[i] = v
	}
	return nil
}

// Stop takes the second sample and returns each source's CPU time since
// Start.
func (m *Meter) Stop(ctx context.Context) ([]Usage, error) {
	if m.start == nil {
		return nil, errors.New("cpustat: Stop before Start")
	}
	out := make([]Usage, len(m.sources))
	for i, s := range m.sources {
		v, err := s.read(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		out[i] = Usage{Name: s.Name, CPU: max(v-m.start[i], 0)}
	}
	return out, nil
}

// Format is the output line of a phase's usage over jobs: each process's
// CPU µs per job, then "nodes", the sum over every process but the one
// named generator (the load generator), and "all", the sum over all.
func Format(us []Usage, jobs int, generator string) string {
	if len(us) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CPU per job (µs, over %d jobs):", jobs)
	var all, nodes time.Duration
	counted := 0
	for _, u := range us {
		fmt.Fprintf(&b, " %s %.1f (%v);", u.Name, u.PerJob(jobs), u.CPU.Round(time.Millisecond))
		all += u.CPU
		if u.Name != generator {
			nodes += u.CPU
			counted++
		}
	}
	if counted > 1 {
		fmt.Fprintf(&b, " nodes %.1f;", Usage{CPU: nodes}.PerJob(jobs))
	}
	fmt.Fprintf(&b, " all %.1f\n", Usage{CPU: all}.PerJob(jobs))
	return b.String()
}
