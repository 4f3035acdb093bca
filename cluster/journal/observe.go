package journal

import "time"

// CommitStats describes one group-commit transaction of a disk journal.
type CommitStats struct {
	// Requests is how many write requests the transaction carried.
	Requests int
	// Events is how many events it wrote (appends refused by a fence
	// write none).
	Events int
	// Duration is the transaction's time, from begin to commit or failure.
	Duration time.Duration
	// Err is the store's error when the transaction failed (then Events
	// is 0).
	Err error
}

// WithCommitObserver calls fn after every group-commit transaction, on the
// writer's goroutine: fn must be quick (a metrics update). SQLite and
// PostgreSQL read it; the memory journal has no transactions.
func WithCommitObserver(fn func(CommitStats)) Option {
	return func(c *config) { c.commitObserver = fn }
}

// observeCommit reports one transaction over ops to the commit observer.
func (e *engine) observeCommit(ops []*op, start time.Time, err error) {
	if e.commitObserver == nil {
		return
	}
	st := CommitStats{Requests: len(ops), Duration: time.Since(start), Err: err}
	if err == nil {
		for _, o := range ops {
			if o.kind == opAppend && o.err == nil {
				st.Events += len(o.recs)
			}
		}
	}
	e.commitObserver(st)
}
