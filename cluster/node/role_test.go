package node_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/node"
)

func TestParsePort(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		arg      string
		wantPort int
		wantRole node.Role
		wantErr  string
	}{
		{name: "FirstSeed", arg: "2551", wantPort: 2551, wantRole: node.RoleBackend},
		{name: "BackendLow", arg: "2000", wantPort: 2000, wantRole: node.RoleBackend},
		{name: "BackendHigh", arg: "2999", wantPort: 2999, wantRole: node.RoleBackend},
		{name: "FrontendLow", arg: "3000", wantPort: 3000, wantRole: node.RoleFrontend},
		{name: "Frontend", arg: "3001", wantPort: 3001, wantRole: node.RoleFrontend},
		{name: "FrontendHigh", arg: "3999", wantPort: 3999, wantRole: node.RoleFrontend},
		{name: "WorkerFreePort", arg: "0", wantPort: 0, wantRole: node.RoleWorker},
		{name: "WorkerBelow", arg: "1999", wantPort: 1999, wantRole: node.RoleWorker},
		{name: "WorkerAbove", arg: "4000", wantPort: 4000, wantRole: node.RoleWorker},
		{name: "NotANumber", arg: "backend", wantErr: `"backend" is not a number`},
		{name: "Negative", arg: "-1", wantErr: "outside 0-65535"},
		{name: "TooLarge", arg: "70000", wantErr: "outside 0-65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			port, role, err := node.ParsePort(tt.arg)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, node.ErrBadPort)
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorContains(t, err, "2000-2999", "the error names the ranges")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantPort, port)
			require.Equal(t, tt.wantRole, role)
		})
	}
}

func TestRoleString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "backend", node.RoleBackend.String())
	require.Equal(t, "frontend", node.RoleFrontend.String())
	require.Equal(t, "worker", node.RoleWorker.String())
	require.Equal(t, "all", node.RoleAll.String())
	require.Equal(t, "Role(9)", node.Role(9).String())
}
