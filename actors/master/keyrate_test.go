package master

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestParseKeyRates: --key-rate takes KEY=N/PERIOD and a bare N/PERIOD,
// comma-separated or repeated; bad input says what is wrong with an
// example.
func TestParseKeyRates(t *testing.T) {
	t.Parallel()
	var r KeyRates
	require.NoError(t, ParseKeyRates("tenant-a=10/s, 100/m", &r))
	require.NoError(t, ParseKeyRates("a=b=5/500ms", &r))
	require.Equal(t, KeyRates{Default: KeyRate{Calls: 100, Per: time.Minute}, PerKey: map[string]KeyRate{
		"tenant-a": {Calls: 10, Per: time.Second}, "a=b": {Calls: 5, Per: 500 * time.Millisecond},
	}}, r)
	require.Equal(t, "5/500ms", FormatKeyRate(r.PerKey["a=b"]))
	require.Equal(t, "10/s", FormatKeyRate(r.PerKey["tenant-a"]))
	for in, want := range map[string]string{
		"tenant-a=10":     "no '/'",
		"tenant-a=0/s":    "not a whole number",
		"tenant-a=1/soon": "neither s, m, h",
		"=1/s":            "the key must be",
		"a=1/s,":          "empty item",
		"1/-1s":           "neither s, m, h nor a positive",
		"a=200000/s":      "count 200000 is not in 1..100000",
	} {
		err := ParseKeyRates(in, &KeyRates{})
		require.ErrorContains(t, err, want, in)
		require.ErrorContains(t, err, "e.g.", in)
	}
}
