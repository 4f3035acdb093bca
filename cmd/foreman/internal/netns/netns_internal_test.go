package netns

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPickSubnet(t *testing.T) {
	t.Parallel()
	p := netip.MustParsePrefix
	tests := []struct {
		name string
		seed int
		used []netip.Prefix
		want string
	}{
		{name: "NothingUsed", seed: 0, want: "10.77.1.0/24"},
		{name: "SeedPicksTheStart", seed: 41, want: "10.77.42.0/24"},
		{name: "SeedWraps", seed: 253 + 4, want: "10.77.5.0/24"},
		{name: "NegativeSeed", seed: -1, want: "10.77.253.0/24"},
		{name: "AddressInsideIsTaken", seed: 0, used: []netip.Prefix{p("10.77.1.254/24")}, want: "10.77.2.0/24"},
		{name: "HostRouteInsideIsTaken", seed: 0, used: []netip.Prefix{p("10.77.1.9/32")}, want: "10.77.2.0/24"},
		{name: "WiderSpecificRouteCovers", seed: 0, used: []netip.Prefix{p("10.77.0.0/22")}, want: "10.77.4.0/24"},
		{name: "DefaultRouteIgnored", seed: 0, used: []netip.Prefix{p("0.0.0.0/0"), p("10.0.0.0/8")}, want: "10.77.1.0/24"},
		{name: "SlashSixteenCounts", seed: 0, used: []netip.Prefix{p("10.77.0.0/16")}, want: ""},
		{name: "OtherSubnetsIgnored", seed: 0, used: []netip.Prefix{p("192.168.1.0/24"), p("10.78.1.0/24")}, want: "10.77.1.0/24"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := pickSubnet(tt.seed, tt.used)
			if tt.want == "" {
				require.ErrorIs(t, err, ErrNoSubnet)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got.String())
		})
	}
}

// TestPickSubnetSkipsEveryUsed checks pickSubnet against a dumb model: the
// answer is free, and every /24 between the start and it is taken.
func TestPickSubnetSkipsEveryUsed(t *testing.T) {
	t.Parallel()
	var used []netip.Prefix
	for x := 10; x < 200; x += 3 {
		used = append(used, netip.MustParsePrefix(fmt.Sprintf("10.77.%d.7/24", x)))
	}
	for seed := range 300 {
		got, err := pickSubnet(seed, used)
		require.NoError(t, err)
		for _, u := range used {
			require.False(t, u.Overlaps(got), "seed %d: %v overlaps %v", seed, got, u)
		}
	}
}

func TestLetters(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{1: "a", 2: "b", 26: "z", 27: "aa", 52: "az", 53: "ba", 702: "zz", 703: "aaa"} {
		require.Equal(t, want, letters(n), "letters(%d)", n)
	}
}

// TestNamesFit: with the largest PID Linux hands out and hundreds of Labs
// in one process, every interface name fits IFNAMSIZ.
func TestNamesFit(t *testing.T) {
	t.Parallel()
	const maxPID = 4194304 // /proc/sys/kernel/pid_max on 64-bit
	name := fmt.Sprintf("fm%d%s", maxPID, letters(26*27))
	for i := 1; i <= MaxHosts; i++ {
		require.LessOrEqual(t, len(linkName(name, i, true)), maxIfName, linkName(name, i, true))
		require.LessOrEqual(t, len(linkName(name, i, false)), maxIfName)
	}
	require.LessOrEqual(t, len(name+"-br"), maxIfName)
	require.NotEqual(t, linkName(name, 1, false), linkName(name, 1, true))
}

func TestParseDst(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]string{"10.77.3.0/24": "10.77.3.0/24", "10.77.3.9/24": "10.77.3.0/24", "10.77.3.9": "10.77.3.9/32", "default": "", "": ""} {
		got, ok := parseDst(s)
		if want == "" {
			require.False(t, ok, s)
			continue
		}
		require.True(t, ok, s)
		require.Equal(t, want, got.String())
	}
}
