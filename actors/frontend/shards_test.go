package frontend

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryShard: answers come back in shard order whatever order the
// asks end in, and any shard's error fails the whole call with every
// shard's error in it.
func TestEveryShard(t *testing.T) {
	got, err := everyShard(4, func(k int) (string, error) { return fmt.Sprint("shard-", k), nil })
	require.NoError(t, err)
	require.Equal(t, []string{"shard-0", "shard-1", "shard-2", "shard-3"}, got)

	errOne, errThree := errors.New("one down"), errors.New("three down")
	got, err = everyShard(4, func(k int) (string, error) {
		switch k {
		case 1:
			return "", errOne
		case 3:
			return "", errThree
		}
		return "ok", nil
	})
	require.Nil(t, got, "no partial answer that looks whole")
	require.ErrorIs(t, err, errOne)
	require.ErrorIs(t, err, errThree)
}
