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
	for _, bad := range []string{"", "0", "x", "=2", "tenant-a=0", "tenant-a=two"} {
		err := master.ParseConcurrencyLimit(bad, &l)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "KEY=N", bad)
	}
}
