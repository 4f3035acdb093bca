//go:build !linux

package main

import "os/exec"

// dieWithParent does nothing here: without Pdeathsig the children notice
// the coordinator's death when their stdin closes.
func dieWithParent(*exec.Cmd) {}

// peakRSS is unknown here.
func peakRSS() int64 { return -1 }
