package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cpuMeter reads the machine's CPU utilisation from /proc/stat (Linux),
// refreshed at most every 200 ms; -1 where /proc/stat is not available.
type cpuMeter struct {
	mu         sync.Mutex // guards the fields below
	last       time.Time
	busy, idle uint64
	value      float64
}

func newCPUMeter() *cpuMeter {
	m := &cpuMeter{value: -1}
	m.busy, m.idle, _ = readProcStat()
	m.last = time.Now()
	return m
}

func (m *cpuMeter) utilisation() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if time.Since(m.last) < 200*time.Millisecond {
		return m.value
	}
	busy, idle, ok := readProcStat()
	if !ok {
		return -1
	}
	if db, di := busy-m.busy, idle-m.idle; db+di > 0 {
		m.value = float64(db) / float64(db+di)
	}
	m.busy, m.idle, m.last = busy, idle, time.Now()
	return m.value
}

// readProcStat returns the busy and idle jiffies of all CPUs.
func readProcStat() (busy, idle uint64, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	defer func() { _ = f.Close() }() // read only: a failed close loses nothing
	s := bufio.NewScanner(f)
	if !s.Scan() {
		return 0, 0, false
	}
	fields := strings.Fields(s.Text())
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		} else {
			busy += v
		}
	}
	return busy, idle, true
}
