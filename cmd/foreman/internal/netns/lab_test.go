package netns_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/testkit"
	"github.com/foreman-actors/foreman/cmd/foreman/internal/netns"
)

// helperEnv makes the test binary a helper inside a namespace instead of
// running the tests: "listen ADDR" accepts connections on ADDR (it prints
// "ready" once listening and exits after helperLifetime), "dial ADDR" exits
// 0 when a TCP connection to ADDR opens within dialTimeout, 1 otherwise.
const (
	helperEnv      = "FOREMAN_NETNS_HELPER"
	helperLifetime = time.Minute
	dialTimeout    = time.Second
)

func TestMain(m *testing.M) {
	if h, ok := os.LookupEnv(helperEnv); ok {
		os.Exit(runHelper(h))
	}
	testkit.VerifyTestMain(m)
}

func runHelper(h string) int {
	mode, addr, _ := strings.Cut(h, " ")
	switch mode {
	case "listen":
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println("ready")
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_ = c.Close() // the dialer only checks that it connected
			}
		}()
		time.Sleep(helperLifetime) // the test kills it long before
		return 3
	case "dial":
		c, err := net.DialTimeout("tcp", addr, dialTimeout)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		_ = c.Close() // connecting was the point
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", h)
	return 2
}

// newLab makes a Lab of n hosts closed at the end of the test, or skips the
// test saying why namespaces cannot be made here.
func newLab(t *testing.T, n int) *netns.Lab {
	t.Helper()
	if testing.Short() {
		t.Skip("creates network namespaces; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lab, err := netns.New(ctx, n)
	if errors.Is(err, netns.ErrUnavailable) {
		if netns.Required() {
			t.Fatalf("%v (%s=require: namespaces must be available here)", err, netns.RequireEnv)
		}
		t.Skipf("SKIP: %v (set %s=require to fail instead)", err, netns.RequireEnv)
	}
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, lab.Close()) })
	return lab
}

// listen runs a listener on port inside h until the test ends.
func listen(t *testing.T, h *netns.Host, port int) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	addr := net.JoinHostPort(h.Addr.String(), fmt.Sprint(port))
	cmd := h.Command(context.Background(), exe)
	cmd.Env = append(os.Environ(), helperEnv+"=listen "+addr)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // it may have exited: Wait reports how
		_ = cmd.Wait()         // killed: its status is not the point
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the listener in %s did not start", h)
	require.Equal(t, "ready\n", line)
	return addr
}

// dialFrom reports whether a TCP connection to addr opens from inside h.
func dialFrom(t *testing.T, h *netns.Host, addr string) bool {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := h.Command(context.Background(), exe)
	cmd.Env = append(os.Environ(), helperEnv+"=dial "+addr)
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return false
	}
	require.NoError(t, err)
	return true
}

// dialFromRoot reports whether a TCP connection to addr opens from the test
// process (the root namespace).
func dialFromRoot(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, dialTimeout)
	if err != nil {
		return false
	}
	_ = c.Close() // connecting was the point
	return true
}

// TestLab creates a Lab of three hosts and checks that every host reaches
// the others and the root namespace reaches every host, that a partition
// cuts one host off from everything but itself and a heal restores it, and
// that two Labs live side by side on different subnets and names.
func TestLab(t *testing.T) {
	lab := newLab(t, 3)
	hosts := lab.Hosts()
	require.Len(t, hosts, 3)
	require.True(t, lab.Prefix().Contains(lab.Gateway()))
	for _, h := range hosts {
		require.True(t, lab.Prefix().Contains(h.Addr), "%s outside %v", h, lab.Prefix())
		require.True(t, strings.HasPrefix(h.Name, lab.Name()+"-"), h.Name)
	}
	require.Contains(t, lab.Name(), fmt.Sprint(os.Getpid()))
	addr1 := listen(t, hosts[0], 7001)
	addr3 := listen(t, hosts[2], 7003)

	t.Run("HostsReachEachOther", func(t *testing.T) {
		require.True(t, dialFromRoot(addr1), "root -> host 1")
		require.True(t, dialFrom(t, hosts[1], addr1), "host 2 -> host 1")
		require.True(t, dialFrom(t, hosts[0], addr3), "host 1 -> host 3")
	})

	t.Run("PartitionCutsTheHostOff", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, hosts[0].Partition(ctx))
		healed := false
		defer func() {
			if !healed {
				require.NoError(t, hosts[0].Heal(ctx))
			}
		}()
		require.False(t, dialFromRoot(addr1), "root -> partitioned host 1")
		require.False(t, dialFrom(t, hosts[1], addr1), "host 2 -> partitioned host 1")
		require.False(t, dialFrom(t, hosts[0], addr3), "partitioned host 1 -> host 3")
		require.True(t, dialFrom(t, hosts[0], addr1), "host 1 -> itself while partitioned")
		require.True(t, dialFrom(t, hosts[1], addr3), "host 2 -> host 3 while host 1 is partitioned")

		require.NoError(t, hosts[0].Heal(ctx))
		healed = true
		require.Eventually(t, func() bool { return dialFromRoot(addr1) }, 10*time.Second, 100*time.Millisecond, "root -> healed host 1")
		require.True(t, dialFrom(t, hosts[1], addr1), "host 2 -> healed host 1")
	})

	t.Run("SecondLabApart", func(t *testing.T) {
		other := newLab(t, 1)
		require.NotEqual(t, lab.Name(), other.Name())
		require.False(t, lab.Prefix().Overlaps(other.Prefix()), "%v and %v", lab.Prefix(), other.Prefix())
		require.NotEqual(t, lab.Bridge(), other.Bridge())
	})
}

// TestCloseDeletesOnlyItsOwn: Close removes the Lab's namespaces, links and
// bridge, and leaves another Lab's alone.
func TestCloseDeletesOnlyItsOwn(t *testing.T) {
	keep := newLab(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lab, err := netns.New(ctx, 2)
	require.NoError(t, err)
	require.Contains(t, objects(t), lab.Bridge())
	require.NoError(t, lab.Close())
	require.NoError(t, lab.Close(), "a second Close")
	for _, o := range objects(t) {
		require.False(t, strings.HasPrefix(o, lab.Name()+"-"), "%s left behind", o)
	}
	left := objects(t)
	require.Contains(t, left, keep.Bridge())
	require.Contains(t, left, keep.Hosts()[0].Name)
	require.Contains(t, left, keep.Hosts()[0].Link)
}

// objects lists the namespaces and the root namespace's links.
func objects(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, args := range [][]string{{"netns", "list"}, {"-o", "link", "show"}} {
		b, err := exec.Command("ip", args...).Output()
		require.NoError(t, err, "ip %v", args)
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) == 0:
			case args[0] == "netns":
				out = append(out, f[0])
			case len(f) > 1:
				name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
				out = append(out, name)
			}
		}
	}
	return out
}
