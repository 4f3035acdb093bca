// Package progress prints the progress of long work (foreman --jobs N,
// foreman bench): on a terminal one line rewritten in place with the count,
// rate and ETA; otherwise a plain log line every few seconds, so that a file
// or a CI log is not filled with carriage returns.
package progress

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/foreman-actors/foreman/actors/clock"
)

// Intervals between lines: on a terminal the line is redrawn often; a log
// gets a line every LogEvery.
const (
	TerminalEvery = 200 * time.Millisecond
	LogEvery      = 5 * time.Second
)

// Format renders one progress line: "label 1,234/10,000 (12.3%) 456/s ETA
// 19s". total 0 means unknown (no percentage, no ETA); the rate is over
// elapsed, and the ETA assumes it holds.
func Format(label string, done, total int64, elapsed time.Duration) string {
	var b strings.Builder
	b.WriteString(label)
	b.WriteByte(' ')
	b.WriteString(group(done))
	if total > 0 {
		fmt.Fprintf(&b, "/%s (%.1f%%)", group(total), 100*float64(min(done, total))/float64(total))
	}
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed.Seconds()
	}
	fmt.Fprintf(&b, " %s/s", group(int64(rate+0.5)))
	switch {
	case total <= 0:
	case done >= total:
		fmt.Fprintf(&b, " done in %s", round(elapsed))
	case rate > 0:
		eta := time.Duration(float64(total-done) / rate * float64(time.Second))
		fmt.Fprintf(&b, " ETA %s", round(eta))
	default:
		b.WriteString(" ETA ?")
	}
	return b.String()
}

// group writes n with thousands separators.
func group(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

func round(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// Reporter counts done units and prints progress lines to its writer. Add
// is safe for concurrent use; Tick prints a line when one is due.
type Reporter struct {
	label    string
	total    int64
	out      io.Writer
	terminal bool
	clock    clock.Clock
	every    time.Duration

	done  atomic.Int64
	mu    sync.Mutex
	start time.Time
	last  time.Time
}

// New returns a Reporter of total units (0: unknown) writing to out; terminal
// says whether out is a terminal (see IsTerminal).
func New(label string, total int64, out io.Writer, terminal bool, cl clock.Clock) *Reporter {
	every := LogEvery
	if terminal {
		every = TerminalEvery
	}
	now := cl.Now()
	return &Reporter{label: label, total: total, out: out, terminal: terminal, clock: cl, every: every, start: now, last: now}
}

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Add counts n more done units.
func (r *Reporter) Add(n int64) { r.done.Add(n) }

// Tick prints a line if one is due (every TerminalEvery on a terminal,
// LogEvery otherwise).
func (r *Reporter) Tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.clock.Now()
	if now.Sub(r.last) < r.every {
		return
	}
	r.last = now
	r.print(now)
}

// Finish prints the final line (ending the terminal's line).
func (r *Reporter) Finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.print(r.clock.Now())
	if r.terminal {
		_, _ = io.WriteString(r.out, "\n")
	}
}

func (r *Reporter) print(now time.Time) {
	line := Format(r.label, r.done.Load(), r.total, now.Sub(r.start))
	if r.terminal {
		// \r and clear to the end of the line: a shorter line leaves no
		// tail of the previous one.
		_, _ = io.WriteString(r.out, "\r"+line+"\x1b[K")
	} else {
		_, _ = io.WriteString(r.out, line+"\n")
	}
}

// Run calls Tick on every TerminalEvery tick of the clock until ctx ends.
func (r *Reporter) Run(ctx context.Context) {
	t := r.clock.NewTicker(TerminalEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			r.Tick()
		}
	}
}
