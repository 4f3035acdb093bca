package frontend

import (
	"errors"
	"sync"
)

// everyShard calls ask for each of n shards at once and returns their
// answers in shard order. Any shard's error fails the whole call (all of
// them, joined): the queries that merge every shard's answer (ListWork,
// Queues, KeyLimits) cannot give a partial one that looks whole.
func everyShard[T any](n int, ask func(k int) (T, error)) ([]T, error) {
	out := make([]T, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[k], errs[k] = ask(k)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
