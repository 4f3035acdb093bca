package cpustat

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A real line of /proc/PID/stat (redis-server), with the fields that
// matter: pid 812, ppid 1, utime 1234, stime 567, cutime 8, cstime 9.
const redisStat = "812 (redis-server) S 1 812 812 0 -1 4194624 1000 0 0 0 1234 567 8 9 20 0 5 0 4242 123456 789 18446744073709551615 1 1 0 0 0 0 0 4096 17987 0 0 0 17 1 0 0 0 0 0\n"

func TestParseStat(t *testing.T) {
	s, err := ParseStat([]byte(redisStat))
	require.NoError(t, err)
	require.Equal(t, Stat{PID: 812, PPID: 1, UTime: 1234, STime: 567, CUTime: 8, CSTime: 9}, s)
	require.Equal(t, 18010*time.Millisecond, s.Own())
	require.Equal(t, 18180*time.Millisecond, s.WithReaped())

	// A command name with spaces and parentheses: fields count from the last ')'.
	odd := strings.Replace(redisStat, "(redis-server)", "(a) b (c))", 1)
	s, err = ParseStat([]byte(odd))
	require.NoError(t, err)
	require.Equal(t, uint64(1234), s.UTime)
	require.Equal(t, 1, s.PPID)

	// This process's own file parses, and its time only grows.
	b, err := os.ReadFile("/proc/self/stat")
	require.NoError(t, err)
	s, err = ParseStat(b)
	require.NoError(t, err)
	require.Equal(t, os.Getpid(), s.PID)
}

func TestParseStatRefusesWhatIsNotAStatLine(t *testing.T) {
	for _, in := range []string{
		"",
		"no parentheses here",
		"812 (redis-server) S 1 812", // cut short
		"x (redis-server) S 1 812 812 0 -1 4194624 1000 0 0 0 1234 567 8 9 20 0",
		"812 (redis-server) S 1 812 812 0 -1 4194624 1000 0 0 0 12x4 567 8 9 20 0",
		"812 (redis-server) S 1 812 812 0 -1 4194624 1000 0 0 0 1234 567 -8 9 20 0",
	} {
		_, err := ParseStat([]byte(in))
		require.ErrorIs(t, err, ErrStat, "%q", in)
	}
}

// writeProc writes a fake /proc with stat files: pid -> (ppid, utime, stime, cutime, cstime).
func writeProc(t *testing.T, procs map[int][5]int) string {
	t.Helper()
	dir := t.TempDir()
	for pid, f := range procs {
		d := filepath.Join(dir, fmt.Sprint(pid))
		require.NoError(t, os.MkdirAll(d, 0o755))
		line := fmt.Sprintf("%d (p%d) S %d 1 1 0 -1 0 0 0 0 0 %d %d %d %d 20 0 1 0 1 1 1\n", pid, pid, f[0], f[1], f[2], f[3], f[4])
		require.NoError(t, os.WriteFile(filepath.Join(d, "stat"), []byte(line), 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "self"), 0o755)) // not a PID: skipped
	return dir
}

func TestTreeCPUSumsTheProcessAndItsDescendants(t *testing.T) {
	proc := writeProc(t, map[int][5]int{
		100: {1, 10, 5, 7, 3},    // the server: own 15, reaped 10
		101: {100, 20, 0, 0, 0},  // a backend
		102: {101, 1, 1, 0, 0},   // the backend's child
		200: {1, 999, 999, 0, 0}, // unrelated
		201: {200, 999, 0, 0, 0}, // unrelated's child
	})
	got, err := TreeCPU(proc, 100)
	require.NoError(t, err)
	require.Equal(t, time.Duration(15+10+20+2)*tick, got)

	got, err = TreeCPU(proc, 102)
	require.NoError(t, err)
	require.Equal(t, 2*tick, got)

	_, err = TreeCPU(proc, 300)
	require.ErrorIs(t, err, ErrStat)
}

func TestParseMetric(t *testing.T) {
	page := `# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total_other 99
process_cpu_seconds_total 12.34
process_open_fds 10
`
	v, err := ParseMetric(strings.NewReader(page), MetricName)
	require.NoError(t, err)
	require.InDelta(t, 12.34, v, 1e-9)

	_, err = ParseMetric(strings.NewReader("process_open_fds 10\n"), MetricName)
	require.ErrorIs(t, err, ErrStat)
	_, err = ParseMetric(strings.NewReader("process_cpu_seconds_total abc\n"), MetricName)
	require.ErrorIs(t, err, ErrStat)
}

func TestParseSource(t *testing.T) {
	for in, want := range map[string]string{
		"backend=4242":                       "backend",
		"frontend=http://127.0.0.1:9100":     "frontend",
		"w=http://127.0.0.1:9100/":           "w",
		"w2=http://127.0.0.1:9100/x/metrics": "w2",
	} {
		s, err := ParseSource(in)
		require.NoError(t, err, in)
		require.Equal(t, want, s.Name)
	}
	for _, in := range []string{"", "backend", "=12", "b=", "b=0", "b=-3", "b=localhost:9100"} {
		_, err := ParseSource(in)
		require.Error(t, err, in)
	}
}

// burn spends about d of CPU time in this goroutine.
func burn(d time.Duration) {
	start, _ := SelfCPU()
	x := 0
	for {
		for i := range 100000 {
			x += i
		}
		now, _ := SelfCPU()
		if now-start >= d {
			_ = x
			return
		}
	}
}

func TestMeterMeasuresTheDeltaPerSource(t *testing.T) {
	var cpu time.Duration // what the fake node reports, moved by the test
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\n", cpu.Seconds())
	}))
	defer srv.Close()
	node, err := ParseSource("node=" + srv.URL)
	require.NoError(t, err)
	ctx := context.Background()

	cpu = 40 * time.Second
	m := NewMeter(Self("gen"), PID("me", os.Getpid()), node)
	require.NoError(t, m.Start(ctx))
	burn(50 * time.Millisecond)
	cpu = 40*time.Second + 500*time.Millisecond
	us, err := m.Stop(ctx)
	require.NoError(t, err)
	require.Len(t, us, 3)
	require.Equal(t, "gen", us[0].Name)
	require.GreaterOrEqual(t, us[0].CPU, 50*time.Millisecond)
	require.Less(t, us[0].CPU, 5*time.Second)
	require.GreaterOrEqual(t, us[1].CPU, 30*time.Millisecond) // /proc ticks are 10 ms
	require.Equal(t, 500*time.Millisecond, us[2].CPU)
	require.InDelta(t, 50.0, us[2].PerJob(10000), 1e-9)

	line := Format(us, 10000, "gen")
	require.Contains(t, line, "CPU per job (µs, over 10000 jobs):")
	require.Contains(t, line, " node 50.0 (500ms);")
	require.Contains(t, line, " nodes ")
	require.Contains(t, line, " all ")

	// A node that stops answering fails the sample, naming it.
	srv.Close()
	_, err = m.Stop(ctx)
	require.ErrorContains(t, err, "node:")
	require.ErrorIs(t, err, ErrStat)
}

func TestStopBeforeStartIsAnError(t *testing.T) {
	_, err := NewMeter(Self("x")).Stop(context.Background())
	require.Error(t, err)
}
