package master_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/master"
)

// TestParseConcurrencyLimit: N sets the default, KEY=N one key; anything
// else is an error that shows the form.
func TestParseConcurrencyLimit(t *testing.T) {
	t.Parallel()
	var l master.ConcurrencyLimits
	require.NoError(t, master.ParseConcurrencyLimit("3", &l))
	require.NoError(t, master.ParseConcurrencyLimit("tenant-a=2", &l))
	require.NoError(t, master.ParseConcurrencyLimit("a=b=5", &l)) // the key is before the last =
	require.Equal(t, 3, l.Limit("other"))
	require.Equal(t, 2, l.Limit("tenant-a"))
	require.Equal(t, 5, l.Limit("a=b"))
	// Comma-separated, as --key-rate: "a=10,b=10" used to set one key
	// named "a=10,b" to 10.
	require.NoError(t, master.ParseConcurrencyLimit("c=10, d=4,7", &l))
	require.Equal(t, 10, l.Limit("c"))
	require.Equal(t, 4, l.Limit("d"))
	require.Equal(t, 7, l.Limit("other"))
	for _, bad := range []string{"", "0", "x", "=2", "tenant-a=0", "tenant-a=two", "a=1,", "a=1,,b=2"} {
		err := master.ParseConcurrencyLimit(bad, &l)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "KEY=N", bad)
	}
}
