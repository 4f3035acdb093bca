//go:build unix

package journal

import (
	"errors"
	"os"
	"syscall"
)

// flockTurns is the turnLock of a side file locked with flock(2): waiters
// hold it shared; a committer tests for them with a non-blocking exclusive
// lock, released at once.
type flockTurns struct {
	f *os.File
}

// openTurns opens (creating) the side file of the journal at path.
func openTurns(path string) (turnLock, error) {
	f, err := os.OpenFile(path+"-writers", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &flockTurns{f: f}, nil
}

func (t *flockTurns) waiting(on bool) {
	how := syscall.LOCK_UN
	if on {
		how = syscall.LOCK_SH
	}
	// A failed call only costs fairness, never correctness: SQLite's lock
	// decides who writes.
	_ = flock(t.f, how)
}

func (t *flockTurns) othersWaiting() bool {
	err := flock(t.f, syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		_ = flock(t.f, syscall.LOCK_UN) // see waiting
		return false
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

func (t *flockTurns) close() error { return t.f.Close() }

// flock calls flock(2) on f, again when a signal interrupted it.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
