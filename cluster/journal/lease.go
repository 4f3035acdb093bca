package journal

import (
	"fmt"
	"time"

	"github.com/foreman-actors/foreman/actors/persistence"
)

// The lease rule shared by the backends that decide it in Go (Memory, and
// SQLite inside its write transaction); PostgreSQL states the same rule in
// SQL on the server's clock.

// checkLease rejects lease arguments no backend can store.
func checkLease(stream, holder string, ttl time.Duration) error {
	if err := checkRelease(stream, holder); err != nil {
		return err
	}
	if ttl <= 0 {
		return fmt.Errorf("%w: stream %q: lease ttl %v must be positive", persistence.ErrInvalid, stream, ttl)
	}
	return nil
}

// checkRelease rejects release arguments no backend can store.
func checkRelease(stream, holder string) error {
	if err := checkStream(stream); err != nil {
		return err
	}
	if holder == "" {
		return fmt.Errorf("%w: stream %q: empty lease holder (name the activation that holds the lease)", persistence.ErrInvalid, stream)
	}
	return nil
}

// leaseGrantable reports whether holder may take a lease whose stored holder
// is cur and which runs until expires (exists false: no lease stored). A
// lease is live while now is before expires.
func leaseGrantable(exists bool, cur string, expires, now time.Time, holder string) bool {
	return !exists || cur == holder || !now.Before(expires)
}

// leaseHeld is the error for a lease refused because st.Holder's is live.
func leaseHeld(stream string, st persistence.LeaseState) error {
	return fmt.Errorf("%w: stream %q: held by %q for another %v", persistence.ErrLeaseHeld, stream, st.Holder, st.Remaining)
}
