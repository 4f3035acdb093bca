package main

import (
	"maps"
	"slices"

	"github.com/foreman-actors/foreman/actors/master"
	"github.com/foreman-actors/foreman/actors/worker"
	"github.com/foreman-actors/foreman/cluster/metrics"
	"github.com/foreman-actors/foreman/cluster/node"
)

// builtinRegistry returns the built-in jobs with the square job's delay set
// from --delay.
func builtinRegistry(a nodeArgs) *worker.Registry {
	reg := worker.NewRegistry()
	var opts []worker.BuiltinOption
	if a.delaySet {
		opts = append(opts, worker.WithSquareDelay(a.delay, a.delay))
	}
	if err := worker.RegisterBuiltins(reg, opts...); err != nil {
		panic(err) // the built-ins are distinct names: cannot happen
	}
	return reg
}

// tuning turns --adaptive and --window into master and worker options.
// done closes the adaptive pool; call it after the workers stop. --rate is
// not a master option: the node runs a throttler per limited type
// (node.WithRateLimits, ClusterConfig.RateLimits).
func tuning(a nodeArgs, m *metrics.Metrics, _ bool) (mopts []master.Option, wopts []worker.Option, done func(), err error) {
	mopts = append(mopts, master.WithDoneRetention(a.doneRetention), master.WithDoneLimit(a.doneLimit),
		master.WithConcurrencyLimits(a.concurrency.Default, a.concurrency.PerKey), master.WithKeyRates(a.keyRates),
		master.WithPriorityAging(a.priorityAging))
	for _, k := range slices.Sorted(maps.Keys(a.fairWeights)) {
		mopts = append(mopts, master.WithFairnessWeight(k, a.fairWeights[k]))
	}
	wopts = []worker.Option{worker.WithWindow(a.window), worker.WithResultHold(a.resultHold)}
	if a.prefetch >= 0 {
		wopts = append(wopts, worker.WithPrefetch(a.prefetch))
	}
	done = func() {}
	lim, err := node.NewAdaptivePool(a.adaptive, max(a.workers, 1)*a.window)
	if err != nil {
		return nil, nil, nil, err
	}
	if lim != nil {
		wopts = append(wopts, worker.WithLimiter(lim))
		done = func() { lim.Close() }
		if err := m.WatchAdaptive(lim); err != nil {
			lim.Close()
			return nil, nil, nil, err
		}
	}
	return mopts, wopts, done, nil
}
