package main

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// overallRate is (n-1) / (last - first) of sorted ts, per second.
func overallRate(ts []time.Time) float64 {
	if len(ts) < 2 {
		return 0
	}
	return float64(len(ts)-1) / ts[len(ts)-1].Sub(ts[0]).Seconds()
}

// mostInWindow returns the largest number of ts (sorted) in any half-open
// window [t, t+w), and where that window starts.
func mostInWindow(ts []time.Time, w time.Duration) (most int, at time.Time) {
	j := 0
	for i := range ts {
		for j < len(ts) && ts[j].Sub(ts[i]) < w {
			j++
		}
		if j-i > most {
			most, at = j-i, ts[i]
		}
	}
	return most, at
}

// between returns the ts (sorted) in [from, to).
func between(ts []time.Time, from, to time.Time) []time.Time {
	var out []time.Time
	for _, t := range ts {
		if !t.Before(from) && t.Before(to) {
			out = append(out, t)
		}
	}
	return out
}

// longestGap is the longest time between consecutive ts (sorted) whose gap
// overlaps [from, to) (zero from and to: anywhere).
func longestGap(ts []time.Time, from, to time.Time) time.Duration {
	g, _ := longestGapEnd(ts, from, to)
	return g
}

// longestGapEnd is longestGap and the time the gap ends (the hand-out
// after it). A gap counts from from when it began before it.
func longestGapEnd(ts []time.Time, from, to time.Time) (gap time.Duration, end time.Time) {
	for i := 1; i < len(ts); i++ {
		a, b := ts[i-1], ts[i]
		if !from.IsZero() && (b.Before(from) || !a.Before(to)) {
			continue
		}
		if !from.IsZero() && a.Before(from) {
			a = from
		}
		if d := b.Sub(a); d > gap {
			gap, end = d, b
		}
	}
	return gap, end
}

// median of xs, with min and max.
func spread(xs []float64) (med, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med, s[0], s[len(s)-1]
}

func fig(xs []float64, format string) string {
	med, lo, hi := spread(xs)
	if len(xs) == 1 {
		return fmt.Sprintf(format, med)
	}
	return fmt.Sprintf(format+" ("+format+"-"+format+")", med, lo, hi)
}

// printSummary writes a Markdown table: per scenario, medians with min-max
// over the runs.
func printSummary(w io.Writer, c config, results map[string][]result) {
	_, _ = fmt.Fprintf(w, "square=%d/s, %d jobs, %d runs each: median (min-max)\n\n", c.rate, c.rate*c.seconds, c.runs)
	_, _ = fmt.Fprintln(w, "| scenario | hand-outs | overall rate (/s) | error vs rate | most in a 1 s window | longest gap (ms) | dispatch resumes after kill (ms) | most in 1 s around the kill | longest gap around the join (ms) |")
	_, _ = fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, s := range c.scenarios {
		rs := results[s]
		name := s
		if n := incomplete(rs); n > 0 {
			name = fmt.Sprintf("%s (%d of %d runs incomplete)", s, n, len(rs))
		}
		col := func(f func(result) float64, format string) string {
			xs := make([]float64, len(rs))
			for i, r := range rs {
				xs[i] = f(r)
			}
			return fig(xs, format)
		}
		resume, around, join := "-", "-", "-"
		if s == "kill" {
			resume = col(func(r result) float64 { return r.ResumeMS }, "%.0f")
			around = col(func(r result) float64 { return float64(r.AroundWindow) }, "%.0f")
		}
		if s == "join" {
			join = col(func(r result) float64 { return r.JoinGapMS }, "%.0f")
		}
		_, _ = fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name,
			col(func(r result) float64 { return float64(r.Handouts) }, "%.0f"),
			col(func(r result) float64 { return r.Rate }, "%.2f"),
			col(func(r result) float64 { return 100 * (r.Rate - float64(c.rate)) / float64(c.rate) }, "%+.2f%%"),
			col(func(r result) float64 { return float64(r.MaxWindow) }, "%.0f"),
			col(func(r result) float64 { return r.MaxGapMS }, "%.0f"),
			resume, around, join)
	}
}

// incomplete counts the runs that ended before every job was done.
func incomplete(rs []result) int {
	n := 0
	for _, r := range rs {
		if r.Incomplete != "" {
			n++
		}
	}
	return n
}
