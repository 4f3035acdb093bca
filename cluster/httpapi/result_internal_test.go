package httpapi

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/membership"
	"github.com/foreman-actors/foreman/messages"
)

func TestStatusNameCoversEveryStatus(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for v := range messages.WorkStatus_name {
		name, ok := statusName(messages.WorkStatus(v))
		if messages.WorkStatus(v) == messages.WorkStatus_WORK_STATUS_UNKNOWN {
			require.False(t, ok)
			continue
		}
		require.True(t, ok, "status %v has no API name", messages.WorkStatus(v))
		require.False(t, seen[name], "two statuses map to %q", name)
		seen[name] = true
	}
	_, ok := statusName(messages.WorkStatus(99))
	require.False(t, ok)
}

// FuzzResultJSON: a result always renders as valid JSON; JSON results pass
// through unchanged, text comes back as the same string.
func FuzzResultJSON(f *testing.F) {
	for _, s := range []string{"", "49", `{"a":1}`, "hello", `"quoted"`, "\xff\xfe", " 7 ", "nul"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := resultJSON(b)
		require.True(t, json.Valid(out), "rendered %q as invalid JSON %q", b, out)
		switch {
		case len(b) == 0:
			require.Equal(t, "null", string(out))
		case json.Valid(b):
			require.Equal(t, string(b), string(out))
		case utf8.Valid(b):
			var s string
			require.NoError(t, json.Unmarshal(out, &s))
			require.Equal(t, string(b), s)
		}
	})
}

func TestMemberFromMembership(t *testing.T) {
	t.Parallel()
	in := membership.Member{ID: "m1", Address: "127.0.0.1:2551", Role: membership.RoleBackend, Kinds: []string{"master"}, Self: true}
	got := MemberFromMembership(in)
	require.Equal(t, Member{ID: "m1", Address: "127.0.0.1:2551", Roles: []string{RoleBackend}, Kinds: []string{"master"}, Self: true}, got)
	in.Kinds[0] = "changed"
	require.Equal(t, "master", got.Kinds[0], "kinds are copied")
	client := MemberFromMembership(membership.Member{ID: "w", Address: "127.0.0.1:4000", Role: membership.RoleWorker, Client: true})
	require.True(t, client.Client)
	require.Equal(t, []string{RoleWorker}, client.Roles)
}
