package worker

import "time"

// Drain asks a worker to finish gracefully: it stops asking for work, hands
// back work that has not started (WorkFailed with ErrWorkerStopping), lets
// running jobs finish, waits for the Acks of their results, deregisters,
// answers the sender Drained and stops. If the master never acknowledges,
// the drain never ends: bound it with a timeout and then stop the worker,
// which hands the rest back.
type Drain struct {
	// Timeout, if positive, bounds the wait for running jobs: those still
	// running when it passes have their ctx cancelled with ErrDrainTimeout
	// (context.Cause) and are handed back to the master at once, which
	// runs them again elsewhere without counting the attempt.
	Timeout time.Duration
}

// Drained answers Drain once the worker has nothing left and is stopping.
type Drained struct {
	// WorkerID is the drained worker's id.
	WorkerID string
}
