package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	line := "812 (redis (x) server) S 1 812 812 0 -1 4194624 1000 0 0 0 1234 567 8 9 20 0 5 0 4242 1 1\n"
	s, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if s.pid != 812 || s.ppid != 1 || s.cpu != (1234+567+8+9)*tick {
		t.Fatalf("got %+v", s)
	}
	for _, bad := range []string{"", "812 redis S 1", "812 (r) S 1 812", "812 (r) S 1 1 1 0 -1 0 0 0 0 0 12x 5 8 9 20"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestTreeCPU(t *testing.T) {
	proc := t.TempDir()
	for pid, f := range map[int][2]int{100: {1, 10}, 101: {100, 20}, 102: {101, 3}, 200: {1, 999}} {
		d := filepath.Join(proc, fmt.Sprint(pid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%d (p) S %d 1 1 0 -1 0 0 0 0 0 %d 0 0 0 20 0\n", pid, f[0], f[1])
		if err := os.WriteFile(filepath.Join(d, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := treeCPU(proc, 100)
	if err != nil || got != 33*tick {
		t.Fatalf("treeCPU = %v, %v; want %v", got, err, 33*tick)
	}
	if _, err := treeCPU(proc, 7); err == nil {
		t.Fatal("a missing process measured")
	}
	if _, err := treeCPU("/proc", os.Getpid()); err != nil {
		t.Fatalf("this process: %v", err)
	}
	if selfCPU() <= 0 || selfCPU() > time.Hour {
		t.Fatal("getrusage")
	}
}
