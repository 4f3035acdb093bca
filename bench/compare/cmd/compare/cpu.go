package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPU accounting, as `foreman bench --cpu-of` does it (a copy: this module
// does not import Foreman's internal packages): this process from
// getrusage, a server and its descendants (PostgreSQL forks a backend per
// connection) from /proc/PID/stat, in USER_HZ ticks of 10 ms.

const tick = 10 * time.Millisecond // 1 / USER_HZ, 100 on Linux

// procStat is the part of /proc/PID/stat CPU accounting needs: parent, and
// own plus reaped children's user+system time.
type procStat struct {
	pid, ppid int
	cpu       time.Duration
}

// parseStat parses /proc/PID/stat; fields count from the last ')', since
// the command name may hold spaces and parentheses.
func parseStat(b []byte) (procStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return procStat{}, fmt.Errorf("not a /proc/PID/stat line: %.60q", b)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return procStat{}, fmt.Errorf("pid of %.60q: %w", b, err)
	}
	rest := strings.Fields(string(b[end+1:])) // rest[0] is field 3
	if len(rest) < 15 {
		return procStat{}, fmt.Errorf("%.60q: %d fields after the name, want at least 15", b, len(rest))
	}
	s := procStat{pid: pid}
	if s.ppid, err = strconv.Atoi(rest[1]); err != nil {
		return procStat{}, fmt.Errorf("ppid %q: %w", rest[1], err)
	}
	for _, f := range rest[11:15] { // utime, stime, cutime, cstime
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil || v < 0 {
			return procStat{}, fmt.Errorf("%q is not a tick count", f)
		}
		s.cpu += time.Duration(v) * tick
	}
	return s, nil
}

// treeCPU sums the CPU time of pid and its live descendants under proc.
func treeCPU(proc string, pid int) (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	root, err := parseStat(b)
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir(proc)
	if err != nil {
		return 0, err
	}
	kids := map[int][]procStat{}
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err != nil || p == pid {
			continue
		}
		b, err := os.ReadFile(filepath.Join(proc, e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		if s, err := parseStat(b); err == nil {
			kids[s.ppid] = append(kids[s.ppid], s)
		}
	}
	total, queue := root.cpu, []int{pid}
	for len(queue) > 0 {
		for _, c := range kids[queue[0]] {
			total += c.cpu
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return total, nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuSample is this process's and each server's CPU time at one moment.
type cpuSample struct {
	self    time.Duration
	servers []time.Duration
}

func sampleCPU(pids []int) (cpuSample, error) {
	s := cpuSample{self: selfCPU()}
	for _, p := range pids {
		v, err := treeCPU("/proc", p)
		if err != nil {
			return s, fmt.Errorf("CPU of server PID %d: %w", p, err)
		}
		s.servers = append(s.servers, v)
	}
	return s, nil
}

// pidList is a repeatable --server-pid flag.
type pidList []int

func (l *pidList) String() string { return fmt.Sprint([]int(*l)) }

func (l *pidList) Set(s string) error {
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 {
		return fmt.Errorf("%q is not a PID", s)
	}
	*l = append(*l, p)
	return nil
}
