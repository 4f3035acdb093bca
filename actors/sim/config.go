package sim

import (
	"fmt"
	"io"
	"time"

	fecore "github.com/foreman-actors/foreman/actors/frontend/core"
	mcore "github.com/foreman-actors/foreman/actors/master/core"
	pcore "github.com/foreman-actors/foreman/actors/persistence/core"
	schedcore "github.com/foreman-actors/foreman/actors/schedule/core"
)

// Config is one simulated cluster and its schedule of faults. The zero
// values of the shape take the defaults of DefaultConfig.
type Config struct {
	// Seed fixes every random choice of the run: the same seed gives the
	// same trace, byte for byte.
	Seed uint64
	// Backends host the shards' masters; Shards is the number of shards.
	Backends, Shards int
	// Frontends take the clients' submissions; Workers run the jobs.
	Frontends, Workers int
	// Clients submit jobs (Jobs each, some in batches) through the
	// frontends, wait, give up, cancel and re-submit.
	Clients, Jobs int
	// Faults is the mix of faults injected during Duration; its zero value
	// injects none (DefaultFaults exercises every kind).
	Faults FaultMix
	// Duration is how long, in virtual time, clients submit and faults
	// happen; Heal is how long the cluster then runs without faults before
	// the final checks.
	Duration, Heal time.Duration
	// Keys gives about half the jobs a unique key or a concurrency key
	// (limit 1), drawn from their ids (issue 37; inv_keys.go judges them).
	// Off by default: it changes the schedules of the fixed seeds.
	Keys bool
	// Fair gives the jobs fairness keys (issue 37 item 4): one client
	// floods one key, the others spread their jobs over it and three more,
	// and the masters weigh one key double (inv_fair.go). Off by default:
	// it changes the schedules of the fixed seeds.
	Fair bool
	// Schedules hosts the scheduler on the backends and adds periodic
	// schedules, one of each missed-tick policy (issue 37 item 2;
	// schedule.go, inv_tick.go). Off by default: it changes the schedules
	// of the fixed seeds.
	Schedules bool
	// Planted reintroduces known bugs into the cores (test-only: proves
	// that the invariants catch them).
	Planted Bugs
	// Trace receives one line per delivered message, timer, journal write
	// and fault; nil turns tracing off (and costs nothing).
	Trace io.Writer
}

// Bugs are the known bugs a run can plant back into the cores, one field
// per core that hosts some (each core's Planted; zero: none).
type Bugs struct {
	Lease  pcore.Bug
	Master mcore.Bug
	Dedupe fecore.Bug
	// Schedule is the scheduler core's (with Config.Schedules).
	Schedule schedcore.Bug
}

// FaultMix says how often each kind of fault happens. Probabilities are
// per message (Loss, Duplicate, Reorder) or per journal batch
// (WriteError); rates are per virtual second of Duration.
type FaultMix struct {
	Loss, Duplicate, Reorder float64
	WriteError               float64
	// Partition: partitions per second; OneWay is the share of them that
	// cut only one direction. Each heals after a while.
	Partition, OneWay float64
	// Crash: node crashes per second (each restarts after a while);
	// Pause: process pauses per second; Suspicion: false suspicions per
	// second (an observer's membership view marks a live node down).
	Crash, Pause, Suspicion float64
	// MaxDrift bounds each node's clock rate's difference from the
	// journal's, as a fraction (0.01 = 1%); the lease's margin covers 2%.
	MaxDrift float64
}

// DefaultFaults is a mix that exercises every kind of fault in most runs.
func DefaultFaults() FaultMix {
	return FaultMix{
		Loss: 0.01, Duplicate: 0.01, Reorder: 0.02, WriteError: 0.01,
		Partition: 0.5, OneWay: 0.3, Crash: 0.5, Pause: 0.5, Suspicion: 0.5,
		MaxDrift: 0.01,
	}
}

// DefaultConfig is a small cluster with the default fault mix.
func DefaultConfig() Config {
	return Config{
		Backends: 3, Shards: 2, Frontends: 2, Workers: 3, Clients: 4, Jobs: 6,
		Faults: DefaultFaults(), Duration: 4 * time.Second, Heal: 6 * time.Second,
	}
}

// withDefaults fills the zero fields of the shape from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	def := func(v *int, x int) {
		if *v == 0 {
			*v = x
		}
	}
	def(&c.Backends, d.Backends)
	def(&c.Shards, d.Shards)
	def(&c.Frontends, d.Frontends)
	def(&c.Workers, d.Workers)
	def(&c.Clients, d.Clients)
	def(&c.Jobs, d.Jobs)
	if c.Duration == 0 {
		c.Duration = d.Duration
	}
	if c.Heal == 0 {
		c.Heal = d.Heal
	}
	return c
}

func (c Config) validate() error {
	if c.Backends < 1 || c.Shards < 1 || c.Frontends < 1 || c.Workers < 1 || c.Clients < 0 || c.Jobs < 0 {
		return fmt.Errorf("sim: a cluster needs at least one backend, shard, frontend and worker: %+v", c)
	}
	if c.Faults.MaxDrift < 0 || c.Faults.MaxDrift >= 0.02 {
		return fmt.Errorf("sim: MaxDrift %v out of [0, 0.02): the lease's margin covers 2%%", c.Faults.MaxDrift)
	}
	return nil
}
