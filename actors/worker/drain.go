package worker

// Drain asks a worker to finish gracefully: it stops asking for work, hands
// back work that has not started (WorkFailed with ErrWorkerStopping), lets
// running jobs finish, waits for the Acks of their results, deregisters,
// answers the sender Drained and stops. If the master never acknowledges,
// the drain never ends: bound it with a timeout and then stop the worker,
// which hands the rest back.
type Drain struct{}

// Drained answers Drain once the worker has nothing left and is stopping.
type Drained struct {
	// WorkerID is the drained worker's id.
	WorkerID string
}
