//go:build linux

package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel SIGKILL the child when this process dies
// (Pdeathsig), however it dies: a SIGKILLed coordinator leaves no senders.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// peakRSS returns this process's peak resident set size in bytes, or -1.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Maxrss * 1024 // kilobytes on Linux
}
