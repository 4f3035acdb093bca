package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// jobSummary is what `foreman --jobs N` reports when its last result is in:
// what a user running the main job wants to know (how many, how fast, how
// long a job took from submission to its result, where the journal is),
// instead of one log line per result.
type jobSummary struct {
	jobs      int
	elapsed   time.Duration   // first submission to last result
	latencies []time.Duration // submission -> result consumed, one per job
	journal   string          // where the journal is, as the node names it
}

// write prints the summary, three lines, on w.
func (s jobSummary) write(w io.Writer) error {
	rate := 0.0
	if s.elapsed > 0 {
		rate = float64(s.jobs) / s.elapsed.Seconds()
	}
	lat := slices.Clone(s.latencies)
	slices.Sort(lat)
	_, err := fmt.Fprintf(w, "jobs      %d in %s (%s jobs/s)\nlatency   submit -> result: p50 %s, p90 %s, p99 %s, max %s\njournal   %s\n",
		s.jobs, roundDur(s.elapsed), thousands(int64(rate+0.5)),
		roundDur(quantile(lat, 0.50)), roundDur(quantile(lat, 0.90)), roundDur(quantile(lat, 0.99)), roundDur(quantile(lat, 1)),
		s.journal)
	if err != nil {
		return fmt.Errorf("writing the summary: %w", err)
	}
	return nil
}

// quantile returns the q-quantile of sorted (nearest rank), 0 when empty.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// roundDur keeps three significant figures or so: 1.234s, 12.3ms, 456µs.
func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}

// thousands writes a non-negative n with thousands separators: 12,345.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
