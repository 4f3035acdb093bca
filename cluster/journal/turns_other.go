//go:build !unix

package journal

// openTurns returns no side file where flock(2) is missing: writers retry
// with short pauses but do not yield to each other.
func openTurns(string) (turnLock, error) { return noTurns{}, nil }

// noTurns is the turnLock of systems without flock: writers still retry
// with short pauses, but a busy writer does not know to yield.
type noTurns struct{}

func (noTurns) waiting(bool)        {}
func (noTurns) othersWaiting() bool { return false }
func (noTurns) close() error        { return nil }
