package testkit_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// recordingTB is a testing.TB that records failures instead of failing the
// real test. Fatal* and FailNow stop the calling goroutine with
// runtime.Goexit, as the testing package does, so expectations must run
// through run, which uses a goroutine of its own. Cleanup is passed to the
// real test, so probes and systems are still torn down.
type recordingTB struct {
	testing.TB

	mu     sync.Mutex
	failed bool
	fatals []string
	logs   []string
}

func newRecordingTB(t *testing.T) *recordingTB { return &recordingTB{TB: t} }

func (r *recordingTB) Helper() {}

func (r *recordingTB) record(fatal bool, s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.fatals = append(r.fatals, s)
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.record(false, fmt.Sprintf(format, args...))
}

func (r *recordingTB) Error(args ...any) { r.record(false, fmt.Sprint(args...)) }

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.record(true, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (r *recordingTB) Fatal(args ...any) {
	r.record(true, fmt.Sprint(args...))
	runtime.Goexit()
}

func (r *recordingTB) Fail() {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
}

func (r *recordingTB) FailNow() {
	r.Fail()
	runtime.Goexit()
}

func (r *recordingTB) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recordingTB) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprint(args...))
}

func (r *recordingTB) Logf(format string, args ...any) { r.Log(fmt.Sprintf(format, args...)) }

// failure returns the recorded failure text ("" if none).
func (r *recordingTB) failure() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.fatals, "\n")
}

func (r *recordingTB) logged() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.logs...)
}

// run calls f in its own goroutine and waits for it to return or to be
// stopped by a Fatal; it reports whether f ran to completion.
func (r *recordingTB) run(f func()) (completed bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
		completed = true
	}()
	<-done
	return completed
}
