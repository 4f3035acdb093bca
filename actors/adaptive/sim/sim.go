// Package sim is a deterministic discrete-event simulator for adaptive
// policies: it drives an adaptive.Core with synthetic services whose optimum
// is known, in simulated time, so an evaluation of minutes of load runs in
// milliseconds and gives the same figures on every machine.
//
// A Service says how fast each job progresses with n jobs in it (processor
// sharing): CPUBound shares Cores among the jobs, Congested slows every job
// once more than K are in it, Thrashing collapses past K (its optimum is
// sharp), Scalable follows the Universal Scalability Law (a broad,
// retrograde top), Cached slows every job as more share a cache (a rounded
// top that falls fast), Stages changes the service over time (the optimum
// jumps) and Drift changes it gradually (the optimum drifts). A
// Load says when jobs arrive: Backlog keeps a fixed number of jobs in the
// system, most of them waiting (saturation), Bursts sends random batches at
// a fixed interval (the seed's producer).
//
// The evaluation lives here too (eval.go): the suite of services (Suite),
// a held-out service the default policy was not tuned on (HeldOut), sweeps
// of fixed levels per stage of a moving service (Sweep) and the
// score, the fraction of the gap between the worst and the best fixed level
// that a policy recovers (Bounds.GapRecovered).
package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/foreman-actors/foreman/actors/adaptive"
)

// Epoch is the simulated time origin.
var Epoch = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// Service is a resource that runs jobs under processor sharing.
type Service interface {
	// Rate is the speed, in work-seconds per second, at which each of n
	// concurrent jobs progresses.
	Rate(n int) float64
	// CPU is the CPU utilisation in [0, 1] with n jobs in it, or -1 when the
	// service is not a CPU.
	CPU(n int) float64
}

// CPUBound is CPU-bound work on Cores cores: up to Cores jobs run at full
// speed, beyond that they share the cores, and each job over Cores costs
// Overhead of the total (context switches, cache misses), so the best level
// is exactly Cores.
type CPUBound struct {
	Cores    int
	Overhead float64
}

// Rate implements Service.
func (c CPUBound) Rate(n int) float64 {
	if n <= c.Cores {
		return 1
	}
	return float64(c.Cores) / float64(n) / (1 + c.Overhead*float64(n-c.Cores))
}

// CPU implements Service.
func (c CPUBound) CPU(n int) float64 { return math.Min(1, float64(n)/float64(c.Cores)) }

// Congested is a resource whose latency grows once more than K requests are
// in it (as in Netflix's concurrency-limits simulation): each job's speed
// falls as (K/n)^2 above K, so throughput peaks at exactly K.
type Congested struct{ K int }

// Rate implements Service.
func (c Congested) Rate(n int) float64 {
	if n <= c.K {
		return 1
	}
	r := float64(c.K) / float64(n)
	return r * r
}

// CPU implements Service.
func (Congested) CPU(int) float64 { return -1 }

// Thrashing is a resource whose total throughput collapses once more than K
// jobs are in it (lock contention, cache or memory thrashing): up to K jobs
// run at full speed, and with n > K the whole resource completes
// K / (1 + Collapse*(n-K)) jobs' worth of work per second, shared among the
// n. With Collapse 0.25, four jobs too many halve the throughput, so a policy
// that overshoots pays at once and the best fixed level is exactly K.
type Thrashing struct {
	K        int
	Collapse float64
}

// Rate implements Service.
func (c Thrashing) Rate(n int) float64 {
	if n <= c.K {
		return 1
	}
	total := float64(c.K) / (1 + c.Collapse*float64(n-c.K))
	return total / float64(n)
}

// CPU implements Service.
func (Thrashing) CPU(int) float64 { return -1 }

// Scalable is a resource that follows the Universal Scalability Law
// (Gunther): with n jobs in it each progresses at 1/(1+Sigma(n-1)+Kappa n(n-1)),
// so the whole resource does n/(1+Sigma(n-1)+Kappa n(n-1)) jobs' worth of work
// per second. Sigma is contention (the serial fraction), Kappa coherency
// (the cost of keeping n jobs consistent with one another). Unlike Thrashing's
// cliff, its throughput rises, rounds over a broad top at
// sqrt((1-Sigma)/Kappa), and falls slowly: the shape measured on real
// databases and caches, and one the default policy was not tuned on.
type Scalable struct {
	Sigma, Kappa float64
}

// ScalablePeak returns the Scalable service with contention sigma whose
// throughput peaks at level peak (Kappa = (1-sigma)/peak^2).
func ScalablePeak(sigma float64, peak int) Scalable {
	return Scalable{Sigma: sigma, Kappa: (1 - sigma) / float64(peak*peak)}
}

// Rate implements Service.
func (c Scalable) Rate(n int) float64 {
	if n <= 1 {
		return 1
	}
	f := float64(n)
	return 1 / (1 + c.Sigma*(f-1) + c.Kappa*f*(f-1))
}

// CPU implements Service.
func (Scalable) CPU(int) float64 { return -1 }

// Cached is a resource whose jobs share a cache (a buffer pool, a CPU's last
// level cache): each extra job evicts the others' working sets, so with n jobs
// in it each progresses at exp(-(n/K)^2/2), and the whole resource does
// n exp(-(n/K)^2/2) jobs' worth of work per second. Its throughput peaks at K
// (at 61% of K jobs' worth) on a rounded top, like Scalable's, but falls
// faster past it (at 2K it is 44% of the peak; Scalable's with 5% contention
// is 85%), and every job is slowed a little even below K.
type Cached struct{ K float64 }

// Rate implements Service.
func (c Cached) Rate(n int) float64 {
	x := float64(n) / c.K
	return math.Exp(-x * x / 2)
}

// CPU implements Service.
func (Cached) CPU(int) float64 { return -1 }

// Drift is a service that changes gradually: Along(0) until Start + Every,
// then Along(frac) with frac rising in equal steps every Every (k Every
// after Start, frac = k Every / (End - Start)), to Along(1) from End on.
// Unlike Stages it has no instant at which the service jumps: each step is
// small, so a policy must follow it step by step. Rate and CPU, outside Run,
// are Along(0)'s.
type Drift struct {
	Start, End, Every time.Duration
	// Along returns the service at fraction frac in [0, 1] of the way.
	Along func(frac float64) Service
}

// Rate implements Service with Along(0).
func (d Drift) Rate(n int) float64 { return d.Along(0).Rate(n) }

// CPU implements Service with Along(0).
func (d Drift) CPU(n int) float64 { return d.Along(0).CPU(n) }

// At implements Varying: the service in force at t seconds and the time of
// its next step.
func (d Drift) At(t float64) (Service, float64) {
	start, end, every := d.Start.Seconds(), d.End.Seconds(), d.Every.Seconds()
	switch {
	case t >= end:
		return d.Along(1), math.Inf(1)
	case every <= 0 || end <= start: // no steps: one jump at End
		return d.Along(0), end
	case t < start:
		return d.Along(0), math.Min(start+every, end)
	}
	k := math.Floor((t - start) / every)
	return d.Along(k * every / (end - start)), math.Min(start+(k+1)*every, end)
}

// Stage is a service that holds until Until.
type Stage struct {
	Until   time.Duration
	Service Service
}

// Stages is a service that changes over time: each stage's service runs
// until its Until, and the last stage runs to the end whatever its Until.
// Run switches at the exact instant, so jobs in flight continue at the new
// stage's rate. Rate and CPU, outside Run, are the first stage's.
type Stages []Stage

// Rate implements Service with the first stage.
func (s Stages) Rate(n int) float64 { return s[0].Service.Rate(n) }

// CPU implements Service with the first stage.
func (s Stages) CPU(n int) float64 { return s[0].Service.CPU(n) }

// At returns the service in force at t seconds and when it next changes
// (+Inf for never).
func (s Stages) At(t float64) (Service, float64) {
	for i, st := range s {
		if i == len(s)-1 {
			return st.Service, math.Inf(1)
		}
		if t < st.Until.Seconds() {
			return st.Service, st.Until.Seconds()
		}
	}
	return nil, math.Inf(1) // empty Stages: Run rejects it
}

// Varying is a Service whose behaviour depends on the time (Stages).
type Varying interface {
	Service
	// At returns the service in force at t seconds and the time of the next
	// change.
	At(t float64) (Service, float64)
}

// serviceAt resolves a Varying service at time t.
func serviceAt(svc Service, t float64) (Service, float64) {
	if v, ok := svc.(Varying); ok {
		return v.At(t)
	}
	return svc, math.Inf(1)
}

// Load produces arrivals.
type Load interface {
	// Arrivals returns how many jobs arrive at time t (seconds since the
	// start) given the number of jobs in the system (queued or running), and
	// the time of the next call (t or earlier: after the next event).
	Arrivals(t float64, inSystem int, rng *rand.Rand) (n int, next float64)
}

// Backlog keeps Depth jobs in the system (queued or running) at every
// instant: saturation, as long as the level is below Depth. Jobs are topped
// up after every event, so their end-to-end time is mostly queueing and says
// nothing; read service times instead. Counting running jobs too keeps the
// load finite for the Unbounded policy, which would otherwise start every
// job the backlog adds, forever: with it, Depth jobs run at once.
type Backlog struct{ Depth int }

// Arrivals implements Load; returning t asks to be called after every event.
func (b Backlog) Arrivals(t float64, inSystem int, _ *rand.Rand) (int, float64) {
	return max(0, b.Depth-inSystem), t
}

// Bursts sends a batch of 0..MaxBatch jobs (uniform) every Interval, like the
// seed's producer.
type Bursts struct {
	Interval time.Duration
	MaxBatch int
}

// Arrivals implements Load.
func (b Bursts) Arrivals(t float64, _ int, rng *rand.Rand) (int, float64) {
	return rng.IntN(b.MaxBatch + 1), t + b.Interval.Seconds()
}

// Phase is a load that holds until Until, then the next phase takes over.
type Phase struct {
	Until time.Duration
	Load  Load
}

// Phases switches loads over time.
type Phases []Phase

// Arrivals implements Load.
func (p Phases) Arrivals(t float64, inSystem int, rng *rand.Rand) (int, float64) {
	for _, ph := range p {
		if t < ph.Until.Seconds() {
			n, next := ph.Load.Arrivals(t, inSystem, rng)
			return n, math.Min(next, ph.Until.Seconds())
		}
	}
	return 0, math.Inf(1)
}

// Scenario is one simulated run.
type Scenario struct {
	Service Service
	Load    Load
	// Work is the mean work of a job, at full speed.
	Work time.Duration
	// WorkJitter spreads each job's work uniformly over Work*(1±WorkJitter).
	WorkJitter float64
	// Duration is the simulated time.
	Duration time.Duration
	// Sample is the interval of the recorded time series (default 1 s).
	Sample time.Duration
	// UseCPU passes the service's CPU utilisation to the policy.
	UseCPU bool
	// Seed seeds job sizes and batch sizes.
	Seed uint64
}

// Point is one sample of the time series.
type Point struct {
	T           float64 // seconds
	Queue       int
	InFlight    int
	Limit       int
	Completions int     // during the sample interval
	MeanE2E     float64 // seconds, over completions in the interval; 0 if none
}

// Result is what a run measured.
type Result struct {
	Series []Point
	// Done holds every completion: time (seconds), end-to-end and service
	// time (seconds).
	Done []Completion
	// MaxLimit is the highest level the policy chose.
	MaxLimit int
}

// Completion is one finished job.
type Completion struct {
	T, E2E, Service float64
}

type job struct {
	remaining float64
	ticket    adaptive.Ticket
}

func at(t float64) time.Time { return Epoch.Add(time.Duration(t * float64(time.Second))) }

// Run simulates the scenario with policy p (which must be fresh) and returns
// what it measured. The same scenario and policy give the same result. The
// clock is simulated: Run reads no real time, so 300 s of load take
// milliseconds. An empty Stages panics (a wiring mistake).
func Run(sc Scenario, p adaptive.Policy) Result {
	if st, ok := sc.Service.(Stages); ok && len(st) == 0 {
		panic("sim: Stages without a stage")
	}
	rng := rand.New(rand.NewPCG(sc.Seed, sc.Seed^0xa5a5))
	sample := sc.Sample
	if sample <= 0 {
		sample = time.Second
	}
	core := adaptive.NewCore[struct{}](p)
	var (
		t, end      = 0.0, sc.Duration.Seconds()
		nextArrival = 0.0 // Arrivals is due whenever t >= nextArrival
		nextSample  = sample.Seconds()
		running     []*job
		res         Result
		cur         Point
		e2eSum      float64
	)
	workOf := func() float64 {
		return sc.Work.Seconds() * (1 + sc.WorkJitter*(2*rng.Float64()-1))
	}
	start := func(ss []adaptive.Start[struct{}]) {
		for _, s := range ss {
			running = append(running, &job{remaining: workOf(), ticket: s.Ticket})
		}
	}
	arrive := func(n int) {
		if n > 0 {
			start(core.PushBatch(at(t), make([]struct{}, n)))
		}
	}
	for t < end {
		if t >= nextArrival {
			var n int
			n, nextArrival = sc.Load.Arrivals(t, core.Len()+len(running), rng)
			arrive(n)
		}
		svc, change := serviceAt(sc.Service, t)
		rate := svc.Rate(len(running))
		tDone, first := math.Inf(1), -1
		for i, j := range running {
			if d := t + j.remaining/rate; d < tDone {
				tDone, first = d, i
			}
		}
		other := math.Min(math.Min(nextSample, end), change)
		if nextArrival > t {
			other = math.Min(other, nextArrival)
		}
		completes := first >= 0 && tDone <= other
		next := other
		if completes {
			next = tDone
		}
		dt := next - t
		for _, j := range running {
			j.remaining -= dt * rate
		}
		t = next
		if completes {
			j := running[first]
			running = slices.Delete(running, first, first+1)
			cpu := -1.0
			if sc.UseCPU {
				cpu = svc.CPU(len(running) + 1)
			}
			now := at(t)
			started := core.Done(now, j.ticket, cpu)
			e2e := now.Sub(j.ticket.Arrival).Seconds()
			res.Done = append(res.Done, Completion{T: t, E2E: e2e, Service: now.Sub(j.ticket.Started).Seconds()})
			cur.Completions++
			e2eSum += e2e
			start(started)
		}
		st := core.Stats()
		res.MaxLimit = max(res.MaxLimit, st.Limit)
		if t >= nextSample {
			cur.T, cur.Queue, cur.InFlight, cur.Limit = t, st.Queue, st.InFlight, st.Limit
			if cur.Completions > 0 {
				cur.MeanE2E = e2eSum / float64(cur.Completions)
			}
			res.Series = append(res.Series, cur)
			cur, e2eSum = Point{}, 0
			nextSample += sample.Seconds()
		}
	}
	return res
}
