package route

import (
	"errors"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
)

// TestShardOfIsStable pins the mapping: journals hold each work in the
// stream it picked, so it must never change.
func TestShardOfIsStable(t *testing.T) {
	for _, tc := range []struct {
		id   string
		n    int
		want int
	}{
		{"a", 4, 0}, {"job-1", 4, 2}, {"work-42", 4, 1}, {"", 4, 1},
		{"job-1", 2, 0}, {"work-42", 2, 1},
		{"job-1", 1, 0}, {"job-1", 0, 0},
	} {
		if got := ShardOf(tc.id, tc.n); got != tc.want {
			t.Errorf("ShardOf(%q, %d) = %d, want %d", tc.id, tc.n, got, tc.want)
		}
	}
}

func TestShardName(t *testing.T) {
	for _, tc := range []struct {
		k, n int
		want string
	}{{0, 1, "master"}, {0, 4, "master/0"}, {3, 4, "master/3"}} {
		if got := ShardName("master", tc.k, tc.n); got != tc.want {
			t.Errorf("ShardName(master, %d, %d) = %q, want %q", tc.k, tc.n, got, tc.want)
		}
	}
}

func TestSharded(t *testing.T) {
	pids := []*actor.PID{actor.NewPID("a", "m0"), actor.NewPID("a", "m1"), actor.NewPID("a", "m2")}
	one, err := Sharded(Fixed(pids[0]))
	if err != nil || one.Shards() != 1 || one.ForWork("x").pid != pids[0] {
		t.Fatalf("one shard: %v, %d shards", err, one.Shards())
	}
	m, err := Sharded(Fixed(pids[0]), Fixed(pids[1]), Fixed(pids[2]))
	if err != nil {
		t.Fatal(err)
	}
	if m.Shards() != 3 {
		t.Fatalf("Shards = %d, want 3", m.Shards())
	}
	for _, id := range []string{"a", "job-1", "work-42", "z"} {
		got, err := m.ForWork(id).Resolve(t.Context())
		if err != nil || !got.Equal(pids[ShardOf(id, 3)]) {
			t.Errorf("ForWork(%q) = %v, %v; want shard %d", id, got, err, ShardOf(id, 3))
		}
	}
	if _, err := Sharded(); !errors.Is(err, ErrEmpty) {
		t.Errorf("Sharded() = %v, want ErrEmpty", err)
	}
	if _, err := Sharded(Fixed(pids[0]), Master{}); !errors.Is(err, ErrEmpty) {
		t.Errorf("Sharded with an empty shard = %v, want ErrEmpty", err)
	}
	if _, err := Sharded(m, Fixed(pids[0])); !errors.Is(err, ErrEmpty) {
		t.Errorf("Sharded of a sharded route = %v, want ErrEmpty", err)
	}
}
