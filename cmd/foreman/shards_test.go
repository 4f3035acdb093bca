package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/foreman-actors/foreman/cluster/httpapi"
)

// TestShardsArg: --shards defaults to 1 (one master, as before sharding),
// takes 1..node.MaxShards on cluster nodes and is refused on the
// all-in-one node, which runs one master.
func TestShardsArg(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want int
		err  string
	}{
		{"Default", []string{"2551"}, 1, ""},
		{"Backend", []string{"2551", "--shards", "4"}, 4, ""},
		{"Worker", []string{"0", "--shards", "4"}, 4, ""},
		{"Zero", []string{"2551", "--shards", "0"}, 0, "--shards 0: must be 1 to"},
		{"AllInOne", []string{"--shards", "2"}, 0, "the all-in-one node runs one master"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := parseNodeArgs(tt.args, func(string) string { return "" }, io.Discard)
			if tt.err != "" {
				if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want a usage error saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.shards != tt.want {
				t.Errorf("shards = %d, want %d", a.shards, tt.want)
			}
		})
	}
}

// TestStatusTableShards: `foreman status` lists every shard's master with
// its epoch and queue, and says which did not answer.
func TestStatusTableShards(t *testing.T) {
	info := &httpapi.StatusInfo{
		Master: httpapi.MasterInfo{Reachable: true, Address: "10.0.0.1:2551", Epoch: 3},
		Shards: []httpapi.ShardInfo{
			{Shard: 0, Master: httpapi.MasterInfo{Reachable: true, Address: "10.0.0.1:2551", Epoch: 3},
				Queue: httpapi.QueueInfo{Pending: 5, InProgress: 2, Done: 7}, Workers: httpapi.WorkersInfo{Idle: 1, Busy: 2}},
			{Shard: 1, Master: httpapi.MasterInfo{Error: "unavailable: the master did not answer in time"}},
		},
		Throttlers: []httpapi.ThrottlerInfo{
			{JobType: "square", Address: "10.0.0.2:2551", Member: "b2"},
			{JobType: "fetch", Error: "node: looking up the throttler of \"fetch\": context deadline exceeded"},
		},
	}
	out := statusTable(info)
	for _, want := range []string{
		"SHARD\tMASTER\tEPOCH\tPENDING\tIN PROGRESS\tDONE\tWORKERS\n",
		"0\t10.0.0.1:2551\t3\t5\t2\t7\t3\n",
		"1\tNOT REACHABLE: unavailable: the master did not answer in time\t",
		"RATE-LIMITED TYPE\tTHROTTLER\n",
		"square\trunning at 10.0.0.2:2551 (member b2)\n",
		"fetch\tNOT FOUND: node: looking up the throttler of \"fetch\": context deadline exceeded\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status table lacks %q:\n%s", want, out)
		}
	}
	if out := statusTable(&httpapi.StatusInfo{Master: info.Master}); strings.Contains(out, "SHARD") || strings.Contains(out, "THROTTLER") {
		t.Errorf("one shard without rate limits shows a shard or throttler table:\n%s", out)
	}
}
