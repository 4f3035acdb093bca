package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMemoryLimitFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		arg  string
		want int64
	}{
		{name: "Off", arg: "off", want: 0},
		{name: "Zero", arg: "0", want: 0},
		{name: "Bytes", arg: "1073741824", want: 1 << 30},
		{name: "MiB", arg: "900MiB", want: 900 << 20},
		{name: "FractionOfGiB", arg: "1.5GiB", want: 3 << 29},
		{name: "KiBWithB", arg: "4KiB", want: 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := parseNodeArgs([]string{"2551", "--memory-limit", tc.arg}, func(string) string { return "" }, io.Discard)
			require.NoError(t, err)
			require.Equal(t, tc.want, a.memoryLimit)
		})
	}
	for _, bad := range []string{"", "abc", "-1GiB", "1TB", "12 MiB MiB", "1e30GiB"} {
		t.Run("Rejects/"+bad, func(t *testing.T) {
			t.Parallel()
			_, err := parseNodeArgs([]string{"2551", "--memory-limit", bad}, func(string) string { return "" }, io.Discard)
			require.ErrorIs(t, err, errUsage)
		})
	}
	t.Run("DefaultIsOff", func(t *testing.T) {
		t.Parallel()
		a, err := parseNodeArgs([]string{"2551"}, func(string) string { return "" }, io.Discard)
		require.NoError(t, err)
		require.Zero(t, a.memoryLimit)
	})
}
