package alias_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/membership/internal/alias"
)

func TestAliases(t *testing.T) {
	t.Parallel()
	a := alias.New("self")
	n := func(ids ...string) []string { return ids }
	require.False(t, a.Known("A"))
	require.Equal(t, []string{"self", "A", "B"}, a.Next(n("self", "A", "B")), "first time: own ids")
	require.True(t, a.Known("A"))
	require.Equal(t, []string{"self", "A", "B"}, a.Next(n("self", "A", "B")), "unchanged while present")
	require.Equal(t, []string{"self", "B"}, a.Next(n("self", "B")), "A goes: protoactor blocks A")
	require.Equal(t, []string{"self", "A.r1", "B"}, a.Next(n("self", "A", "B")), "A returns under a fresh alias")
	require.Equal(t, []string{"self", "A.r1"}, a.Next(n("self", "A")), "kept while present")
	require.Equal(t, []string{"self"}, a.Next(n("self")))
	require.Equal(t, []string{"self", "A.r2", "B.r1"}, a.Next(n("self", "A", "B")), "every return a new one")
	require.Equal(t, []string{"self"}, a.Next(n("self")), "this node's own id never changes")
	require.Equal(t, []string{"self"}, a.Next(n("self")))
}

func TestAliasesForget(t *testing.T) {
	t.Parallel()
	a := alias.New("self")
	require.Equal(t, []string{"self", "A"}, a.Next([]string{"self", "A"}))
	a.Forget("A")
	require.Equal(t, []string{"self", "A.r1"}, a.Next([]string{"self", "A"}), "refused: a fresh alias at once")
	a.Forget("self")
	require.Equal(t, []string{"self", "A.r1"}, a.Next([]string{"self", "A"}), "own id never changes")
}
