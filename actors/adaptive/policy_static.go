package adaptive

import (
	"fmt"
	"time"
)

// Unlimited is the level the Unbounded policy reports. It is a level no
// queue reaches, not math.MaxInt, so that sums of levels cannot overflow.
const Unlimited = 1 << 30

// Fixed is a policy that never moves: a static concurrency limit, the seed's
// Queued mailbox ("The mailbox will now run only 4 tasks at the same time at
// most"). It is the sweep of the evaluation and the choice where a fixed pool
// is wanted. A Fixed below 1 acts as 1 (Core never runs fewer); NewFixed and
// WithFixed reject it instead.
type Fixed int

// NewFixed returns Fixed(n), or an error wrapping ErrInvalidConfig when n is
// below 1 or above Unlimited.
func NewFixed(n int) (Fixed, error) {
	if n < 1 || n > Unlimited {
		return 0, fmt.Errorf("%w: fixed level %d must be in [1, %d]", ErrInvalidConfig, n, Unlimited)
	}
	return Fixed(n), nil
}

// Observe returns the fixed level.
func (f Fixed) Observe(Observation, time.Time) int { return int(f) }

// Limit returns the fixed level.
func (f Fixed) Limit() int { return int(f) }

// Unbounded returns the policy of the seed's naive Parallel mailbox: no
// limit at all, every job starts the moment it arrives and nothing ever
// waits in the queue. It exists to be compared with, not to be used: on
// CPU-bound work the jobs share the cores, so each takes as many times longer
// as there are jobs per core (the seed's 5 s jobs took 22 s).
func Unbounded() Policy { return unbounded{} }

type unbounded struct{}

func (unbounded) Observe(Observation, time.Time) int { return Unlimited }
func (unbounded) Limit() int                         { return Unlimited }
