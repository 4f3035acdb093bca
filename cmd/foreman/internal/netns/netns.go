// Package netns builds small networks of Linux network namespaces for tests
// that need several hosts on one machine. Each host is a namespace with one
// address on a private /24; a veth pair joins it to a bridge in the root
// namespace, and the bridge has an address on the same /24, so the calling
// process reaches every host directly. A host's link can be set down (the
// host is partitioned from everything else, as if its cable were pulled) and
// up again.
//
// Every object a [Lab] creates (namespaces, veth pairs, the bridge) is named
// after the calling process's PID and a per-process sequence, and a name that
// already exists (a leftover of a killed run whose PID came round again) is
// never reused, so runs in parallel or leftovers never collide. [Lab.Close]
// deletes only what its Lab created.
//
// It needs root and iproute2's ip command; [New] reports their absence (and
// a kernel or container that refuses namespaces) as [ErrUnavailable], so a
// test can skip saying why.
package netns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Limits of a Lab.
const (
	// MaxHosts is the most hosts one Lab has (addresses .1 to .MaxHosts;
	// the bridge is .254).
	MaxHosts = 9
	// maxIfName is the longest interface name Linux accepts (IFNAMSIZ-1).
	maxIfName = 15
	// gatewayOctet is the last octet of the bridge's address.
	gatewayOctet = 254
	// cleanupTimeout bounds each delete of Close.
	cleanupTimeout = 10 * time.Second
)

// RequireEnv names the environment variable that, set to "require", makes
// tests fail rather than skip when namespaces are unavailable: CI runs as
// root with iproute2 and sets it, so the tests cannot skip there unseen
// (go test prints a skip only with -v).
const RequireEnv = "FOREMAN_TEST_NETNS"

// Required reports whether RequireEnv is "require".
func Required() bool { return os.Getenv(RequireEnv) == "require" }

// subnets is where a Lab's /24 comes from: 10.77.X.0/24 for a free X.
var subnets = netip.MustParsePrefix("10.77.0.0/16")

// Sentinel errors.
var (
	// ErrUnavailable reports that network namespaces cannot be made here:
	// not root, no ip command, or the kernel refused the first namespace,
	// bridge or veth pair. Tests skip on it.
	ErrUnavailable = errors.New("netns: network namespaces unavailable")
	// ErrNoSubnet reports that every 10.77.X.0/24 overlaps an address or a
	// route of the root namespace.
	ErrNoSubnet = errors.New("netns: no free subnet in 10.77.0.0/16")
)

// labSeq numbers the Labs of this process (the letter in their names).
var labSeq atomic.Int64

// Lab is a bridge in the root namespace and the hosts on it. Make one with
// [New]; Close it (in t.Cleanup) once no process runs in its hosts. Its
// methods are safe for concurrent use.
type Lab struct {
	ip      string
	name    string
	bridge  string
	prefix  netip.Prefix
	gateway netip.Addr
	hosts   []*Host

	mu     sync.Mutex
	undo   [][]string // ip commands that delete what was created, in creation order
	closed bool
}

// Host is one namespace of a Lab.
type Host struct {
	// Name is the namespace's name (ip netns exec Name ...).
	Name string
	// Addr is the host's address on the Lab's /24.
	Addr netip.Addr
	// Link is the root-namespace end of the host's veth pair, a port of the
	// bridge: setting it down partitions the host.
	Link string

	lab *Lab
}

// New creates a Lab of n hosts (1 to MaxHosts) named "fm<pid><letter>": the
// bridge is fm<pid><letter>-br with address 10.77.X.254/24, host i (from 1)
// is the namespace fm<pid><letter>-h<i> with address 10.77.X.i/24, joined to
// the bridge by the veth pair fm<pid><letter>-<i> (root side) and
// fm<pid><letter>-<i>p. X is the first /24 of 10.77.0.0/16, from one derived
// from the PID, that no address or route of the root namespace overlaps
// (routes wider than a /16, such as a default route, do not count).
//
// On an error New deletes what it had created. The error wraps
// ErrUnavailable when namespaces cannot be made here at all.
func New(ctx context.Context, n int) (*Lab, error) {
	if n < 1 || n > MaxHosts {
		return nil, fmt.Errorf("netns: %d hosts: a Lab has 1 to %d", n, MaxHosts)
	}
	if uid := os.Geteuid(); uid != 0 {
		return nil, fmt.Errorf("%w: needs root to create namespaces and links (running as uid %d)", ErrUnavailable, uid)
	}
	ip, err := lookIP()
	if err != nil {
		return nil, err
	}
	l := &Lab{ip: ip}
	if err := l.create(ctx, n); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	return l, nil
}

// lookIP finds iproute2's ip command: on PATH, else in the sbin directories
// a non-login root shell may lack.
func lookIP() (string, error) {
	if p, err := exec.LookPath("ip"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: no ip command on PATH (install iproute2)", ErrUnavailable)
}

func (l *Lab) create(ctx context.Context, n int) error {
	pid := os.Getpid()
	// The subnet is picked and the bridge given its address under a lock,
	// so that two processes creating Labs at once pick different subnets.
	unlock, err := lockSubnets()
	if err != nil {
		return err
	}
	defer unlock()
	existing, err := l.existingNames(ctx)
	if err != nil {
		return err
	}
	for {
		l.name = fmt.Sprintf("fm%d%s", pid, letters(labSeq.Add(1)))
		if !existing.hasPrefix(l.name + "-") {
			break
		}
	}
	l.bridge = l.name + "-br"
	if len(linkName(l.name, n, true)) > maxIfName {
		return fmt.Errorf("netns: interface names of %s would exceed %d characters", l.name, maxIfName)
	}
	used, err := l.usedPrefixes(ctx)
	if err != nil {
		return err
	}
	l.prefix, err = pickSubnet(pid, used)
	if err != nil {
		return err
	}
	base := l.prefix.Addr().As4()
	base[3] = gatewayOctet
	l.gateway = netip.AddrFrom4(base)

	// The first bridge, namespace and veth pair tell whether this machine
	// can make them at all.
	if err := l.add(ctx, []string{"link", "del", l.bridge}, "link", "add", "name", l.bridge, "type", "bridge"); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if err := l.run(ctx, "addr", "add", netip.PrefixFrom(l.gateway, l.prefix.Bits()).String(), "dev", l.bridge); err != nil {
		return err
	}
	if err := l.run(ctx, "link", "set", l.bridge, "up"); err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		h, err := l.addHost(ctx, i)
		if err != nil {
			if i == 1 {
				return fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			return err
		}
		l.hosts = append(l.hosts, h)
	}
	return nil
}

func (l *Lab) addHost(ctx context.Context, i int) (*Host, error) {
	a := l.prefix.Addr().As4()
	a[3] = byte(i)
	h := &Host{
		Name: fmt.Sprintf("%s-h%d", l.name, i),
		Addr: netip.AddrFrom4(a),
		Link: linkName(l.name, i, false),
		lab:  l,
	}
	peer := linkName(l.name, i, true)
	if err := l.add(ctx, []string{"netns", "del", h.Name}, "netns", "add", h.Name); err != nil {
		return nil, err
	}
	// Deleting the root end deletes the pair, wherever the peer is.
	if err := l.add(ctx, []string{"link", "del", h.Link}, "link", "add", h.Link, "type", "veth", "peer", "name", peer); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"link", "set", peer, "netns", h.Name},
		{"link", "set", h.Link, "master", l.bridge},
		{"link", "set", h.Link, "up"},
		{"-n", h.Name, "addr", "add", netip.PrefixFrom(h.Addr, l.prefix.Bits()).String(), "dev", peer},
		{"-n", h.Name, "link", "set", peer, "up"},
		{"-n", h.Name, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := l.run(ctx, s...); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// linkName is the name of host i's veth end: the root side, or the peer
// that moves into the namespace.
func linkName(lab string, i int, peer bool) string {
	s := fmt.Sprintf("%s-%d", lab, i)
	if peer {
		s += "p"
	}
	return s
}

// letters writes n >= 1 in bijective base 26: 1 a, 26 z, 27 aa.
func letters(n int64) string {
	var b []byte
	for n > 0 {
		n--
		b = append([]byte{byte('a' + n%26)}, b...)
		n /= 26
	}
	return string(b)
}

// Name is the prefix of every object the Lab created (fm<pid><letter>).
func (l *Lab) Name() string { return l.name }

// Bridge is the name of the Lab's bridge in the root namespace.
func (l *Lab) Bridge() string { return l.bridge }

// Prefix is the Lab's /24.
func (l *Lab) Prefix() netip.Prefix { return l.prefix }

// Gateway is the bridge's address: the calling process's address on the
// Lab's network.
func (l *Lab) Gateway() netip.Addr { return l.gateway }

// Hosts are the Lab's hosts, host 1 first.
func (l *Lab) Hosts() []*Host { return l.hosts }

// Command returns a command that runs name with args inside the host's
// namespace (ip netns exec; the process keeps its PID through the exec, so
// signals reach it). It is killed when ctx ends and, as insurance against a
// test process that dies without its cleanup, when the thread that started
// it exits (Pdeathsig).
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, h.lab.ip, append([]string{"netns", "exec", h.Name, name}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Partition sets the host's link down: no packet passes between the host
// and the bridge (other hosts and the calling process) until Heal. Processes
// inside the host still reach each other.
func (h *Host) Partition(ctx context.Context) error {
	return h.lab.run(ctx, "link", "set", h.Link, "down")
}

// Heal sets the host's link up again.
func (h *Host) Heal(ctx context.Context) error {
	return h.lab.run(ctx, "link", "set", h.Link, "up")
}

// String is the host's namespace and address.
func (h *Host) String() string { return h.Name + "(" + h.Addr.String() + ")" }

// Close deletes what the Lab created, latest first, and returns every
// failure. It is safe to call more than once. Processes still running in a
// host keep its namespace alive after its name is deleted: stop them first.
func (l *Lab) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	for i := len(l.undo) - 1; i >= 0; i-- {
		// Its own deadline: Close runs in cleanups, after the test's
		// context may have ended.
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		err := l.runLocked(ctx, l.undo[i]...)
		cancel()
		if err != nil && !isGone(err) {
			errs = append(errs, err)
		}
	}
	l.undo = nil
	return errors.Join(errs...)
}

// isGone reports an error of deleting something that no longer exists (a
// veth pair goes when either end is deleted or its namespace goes).
func isGone(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Cannot find device") || strings.Contains(s, "No such file or directory")
}

// add runs an ip command that creates something, and records undo to delete
// it at Close.
func (l *Lab) add(ctx context.Context, undo []string, args ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.runLocked(ctx, args...); err != nil {
		return err
	}
	l.undo = append(l.undo, undo)
	return nil
}

func (l *Lab) run(ctx context.Context, args ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runLocked(ctx, args...)
}

func (l *Lab) runLocked(ctx context.Context, args ...string) error {
	_, err := l.output(ctx, args...)
	return err
}

// output runs ip with args and returns its stdout.
func (l *Lab) output(ctx context.Context, args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, l.ip, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("netns: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// names are the namespaces and links of the root namespace.
type names []string

func (ns names) hasPrefix(p string) bool {
	for _, n := range ns {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// existingNames lists the namespaces and the root namespace's links.
func (l *Lab) existingNames(ctx context.Context) (names, error) {
	var out names
	nsOut, err := l.output(ctx, "netns", "list")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	for _, line := range strings.Split(string(nsOut), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			out = append(out, f[0]) // "name (id: 3)"
		}
	}
	linkOut, err := l.output(ctx, "-j", "link", "show")
	if err != nil {
		return nil, err
	}
	var links []struct {
		Name string `json:"ifname"`
	}
	if err := json.Unmarshal(linkOut, &links); err != nil {
		return nil, fmt.Errorf("netns: ip -j link show: %w", err)
	}
	for _, k := range links {
		out = append(out, k.Name)
	}
	return out, nil
}

// usedPrefixes are the IPv4 addresses (with their prefix) and route
// destinations of the root namespace.
func (l *Lab) usedPrefixes(ctx context.Context) ([]netip.Prefix, error) {
	addrOut, err := l.output(ctx, "-j", "-4", "addr", "show")
	if err != nil {
		return nil, err
	}
	var ifaces []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(addrOut, &ifaces); err != nil {
		return nil, fmt.Errorf("netns: ip -j -4 addr show: %w", err)
	}
	var used []netip.Prefix
	for _, i := range ifaces {
		for _, a := range i.AddrInfo {
			if addr, err := netip.ParseAddr(a.Local); err == nil {
				if p, err := addr.Prefix(a.PrefixLen); err == nil {
					used = append(used, p)
				}
			}
		}
	}
	routeOut, err := l.output(ctx, "-j", "-4", "route", "show")
	if err != nil {
		return nil, err
	}
	var routes []struct {
		Dst string `json:"dst"`
	}
	if err := json.Unmarshal(routeOut, &routes); err != nil {
		return nil, fmt.Errorf("netns: ip -j -4 route show: %w", err)
	}
	for _, r := range routes {
		if p, ok := parseDst(r.Dst); ok {
			used = append(used, p)
		}
	}
	return used, nil
}

// parseDst reads a route destination: a prefix, or an address (a /32);
// "default" and other words are not prefixes.
func parseDst(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// pickSubnet returns the first 10.77.X.0/24, X from 1 to 253 starting at
// one derived from seed and wrapping, that overlaps none of used. Prefixes
// wider than a /16 (a default route, a 10.0.0.0/8 route) do not count: a
// /24 on the bridge is more specific and wins.
func pickSubnet(seed int, used []netip.Prefix) (netip.Prefix, error) {
	const first, count = 1, 253
	start := seed % count
	if start < 0 {
		start += count
	}
	for k := range count {
		x := first + (start+k)%count
		base := subnets.Addr().As4()
		base[2] = byte(x)
		cand := netip.PrefixFrom(netip.AddrFrom4(base), 24)
		free := true
		for _, u := range used {
			if u.Bits() >= 16 && u.Overlaps(cand) {
				free = false
				break
			}
		}
		if free {
			return cand, nil
		}
	}
	return netip.Prefix{}, ErrNoSubnet
}

// lockSubnets takes an exclusive lock shared by every process that uses
// this package, so picking a subnet and taking it is atomic.
func lockSubnets() (unlock func(), err error) {
	path := filepath.Join(os.TempDir(), "foreman-netns.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("netns: lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return nil, errors.Join(fmt.Errorf("netns: locking %s: %w", path, err), f.Close())
	}
	return func() {
		// Closing the file releases the lock; a failed close changes
		// nothing for the caller.
		_ = f.Close()
	}, nil
}

// BridgeFiltered reports whether bridged traffic passes the root
// namespace's iptables FORWARD chain (br_netfilter loaded with
// bridge-nf-call-iptables=1): a DROP policy there, as Docker sets, cuts the
// hosts off from each other while the calling process still reaches them.
// Tests print it when hosts cannot see each other.
func BridgeFiltered() bool {
	b, err := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables")
	return err == nil && strings.TrimSpace(string(b)) == "1"
}
