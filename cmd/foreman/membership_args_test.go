package main

import (
	"bytes"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/membership/etcdmembers/etcdtest"
)

// TestMembershipArgs: --membership and FOREMAN_MEMBERSHIP, which wins,
// and what a bad combination says (exit 2 before anything starts).
func TestMembershipArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     string
		want    string
		wantErr string // empty: must parse
	}{
		{name: "DefaultSeeds", args: []string{"2551"}, want: "seeds"},
		{name: "AllInOneSeeds", args: nil, want: "seeds"},
		{name: "Flag", args: []string{"2551", "--membership", "etcd://10.0.0.5:2379", "--insecure"}, want: "etcd://10.0.0.5:2379"},
		{name: "DefaultPort", args: []string{"3001", "--membership", "etcd://e1,e2", "--insecure"}, want: "etcd://e1:2379,e2:2379"},
		{name: "Env", args: []string{"0", "--insecure"}, env: "etcd://e1:2379", want: "etcd://e1:2379"},
		{name: "FlagWinsOverEnv", args: []string{"2551", "--membership", "seeds"}, env: "etcd://e1:2379", want: "seeds"},
		{name: "SeedsWithSeeds", args: []string{"2551", "--membership", "seeds", "--seeds", "h:2551"}, want: "seeds"},
		{name: "Unknown", args: []string{"2551", "--membership", "consul://h"}, wantErr: "--membership: node: invalid configuration: membership \"consul://h\": want seeds, or etcd://"},
		{name: "BadEnv", args: []string{"2551"}, env: "etcd://", wantErr: "FOREMAN_MEMBERSHIP: node: invalid configuration: membership \"etcd://\""},
		{name: "BadPort", args: []string{"2551", "--membership", "etcd://h:x"}, wantErr: "not 1-65535"},
		{name: "SeedsWithEtcd", args: []string{"2551", "--membership", "etcd://h:2379", "--seeds", "h:2551"}, wantErr: "--seeds is for seed membership"},
		{name: "EtcdOnAllInOne", args: []string{"--membership", "etcd://h:2379"}, wantErr: "the all-in-one node runs no cluster"},
		{name: "EtcdEnvOnAllInOne", env: "etcd://h:2379", wantErr: "FOREMAN_MEMBERSHIP etcd://h:2379: the all-in-one node runs no cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			getenv := func(k string) string {
				if k == membershipEnv {
					return tt.env
				}
				return ""
			}
			a, err := parseNodeArgs(tt.args, getenv, io.Discard)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, errUsage)
				require.ErrorContains(t, err, tt.wantErr)
				if tt.env == "" {
					var stdout, stderr bytes.Buffer
					require.Equal(t, 2, run(tt.args, &stdout, &stderr), "exit 2 on a usage error")
					require.Contains(t, stderr.String(), tt.wantErr)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, a.membership)
		})
	}
}

// TestMembershipUnreachable: a backend whose etcd nobody answers at exits
// 1 within the registration timeout, naming the URL and what to check.
func TestMembershipUnreachable(t *testing.T) {
	t.Parallel()
	etcdtest.Binary(t) // runs where the etcd tests run
	url := "etcd://127.0.0.1:" + strconv.Itoa(etcdtest.FreePort(t))
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run([]string{freeBackendPort(t), "--membership", url}, &stdout, &stderr)
	require.Equal(t, 1, code, "stderr: %s", stderr.String())
	require.Contains(t, stderr.String(), "cannot register with etcd at "+url+" within 5s (is etcd running there and reachable from this host?)")
	require.Less(t, time.Since(start), 20*time.Second)
}
