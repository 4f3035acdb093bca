package main

import (
	"github.com/foreman-actors/foreman/actors/worker"
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
