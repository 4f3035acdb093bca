package route_test

import (
	"context"
	"errors"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/route"
)

func TestMaster(t *testing.T) {
	t.Parallel()
	pid := actor.NewPID("nonhost", "master")
	boom := errors.New("boom")

	tests := []struct {
		name     string
		master   route.Master
		resolver bool
		want     *actor.PID
		wantErr  []error // each must match with errors.Is
	}{
		{name: "Fixed", master: route.Fixed(pid), want: pid},
		{name: "Resolver", master: route.Resolver(func(context.Context) (*actor.PID, error) { return pid, nil }), resolver: true, want: pid},
		{name: "ResolverFails", master: route.Resolver(func(context.Context) (*actor.PID, error) { return nil, boom }), resolver: true, wantErr: []error{route.ErrNoMaster, boom}},
		{name: "ResolverFailsWithErrNoMaster", master: route.Resolver(func(context.Context) (*actor.PID, error) { return nil, route.ErrNoMaster }), resolver: true, wantErr: []error{route.ErrNoMaster}},
		{name: "ResolverReturnsNil", master: route.Resolver(func(context.Context) (*actor.PID, error) { return nil, nil }), resolver: true, wantErr: []error{route.ErrNoMaster}},
		{name: "FixedNil", master: route.Fixed(nil), wantErr: []error{route.ErrNoMaster, route.ErrEmpty}},
		{name: "Zero", master: route.Master{}, wantErr: []error{route.ErrNoMaster, route.ErrEmpty}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.resolver, tt.master.IsResolver())
			got, err := tt.master.Resolve(context.Background())
			if tt.wantErr == nil {
				require.NoError(t, err)
				require.Same(t, tt.want, got)
				require.NoError(t, tt.master.Validate())
				return
			}
			require.Nil(t, got)
			for _, want := range tt.wantErr {
				require.ErrorIs(t, err, want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, route.Master{}.Validate(), route.ErrEmpty)
	require.ErrorIs(t, route.Fixed(nil).Validate(), route.ErrEmpty)
	require.NoError(t, route.Fixed(actor.NewPID("nonhost", "master")).Validate())
}

func TestResolveHonoursCtx(t *testing.T) {
	t.Parallel()
	m := route.Resolver(func(ctx context.Context) (*actor.PID, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Resolve(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, route.ErrNoMaster)
}

func TestAfterGone(t *testing.T) {
	t.Parallel()
	pid := actor.NewPID("nonhost", "master")
	resolve := func(context.Context) (*actor.PID, error) { return pid, nil }

	// Without WithAfterGone, f never runs and stop reports it stopped it.
	for name, m := range map[string]route.Master{"Fixed": route.Fixed(pid), "Resolver": route.Resolver(resolve)} {
		stop := m.AfterGone(pid, func() { t.Errorf("%s: f ran", name) })
		require.True(t, stop(), name)
	}

	// With it, the route hands pid and f to the function and returns its stop.
	var gotPID *actor.PID
	var fs []func()
	m := route.Resolver(resolve, route.WithAfterGone(func(p *actor.PID, f func()) func() bool {
		gotPID = p
		fs = append(fs, f)
		return func() bool { return false }
	}))
	ran := false
	stop := m.AfterGone(pid, func() { ran = true })
	require.Same(t, pid, gotPID)
	require.False(t, stop(), "the resolver's own stop")
	require.Len(t, fs, 1)
	fs[0]()
	require.True(t, ran)
	require.True(t, m.AfterGone(nil, func() { t.Error("f ran for a nil PID") })(), "a nil PID is never watched")
}

func TestForget(t *testing.T) {
	t.Parallel()
	pid := actor.NewPID("nonhost", "master")
	resolve := func(context.Context) (*actor.PID, error) { return pid, nil }
	route.Fixed(pid).Forget(pid)        // no-op
	route.Resolver(resolve).Forget(pid) // no-op without WithForget
	var got []*actor.PID
	m := route.Resolver(resolve, route.WithForget(func(p *actor.PID) { got = append(got, p) }))
	m.Forget(pid)
	m.Forget(nil) // never reported
	require.Equal(t, []*actor.PID{pid}, got)
}

// TestCached: a fixed route and a resolver's cache hit answer at once; a
// resolver without a cache, or with a miss, leaves the caller to Resolve.
func TestCached(t *testing.T) {
	t.Parallel()
	pid := actor.NewPID("nonhost", "master")
	resolve := func(context.Context) (*actor.PID, error) { return pid, nil }
	var hit *actor.PID
	tests := []struct {
		name   string
		master route.Master
		want   *actor.PID
	}{
		{name: "Fixed", master: route.Fixed(pid), want: pid},
		{name: "ResolverWithoutCache", master: route.Resolver(resolve)},
		{name: "CacheMiss", master: route.Resolver(resolve, route.WithCached(func() *actor.PID { return hit }))},
		{name: "CacheHit", master: route.Resolver(resolve, route.WithCached(func() *actor.PID { return pid })), want: pid},
		{name: "ShardedKeepsEachShardsCache", master: mustSharded(t, route.Resolver(resolve), route.Resolver(resolve, route.WithCached(func() *actor.PID { return pid }))).Shard(1), want: pid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := tc.master.Cached()
			require.Equal(t, tc.want != nil, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

func mustSharded(t *testing.T, shards ...route.Master) route.Master {
	t.Helper()
	m, err := route.Sharded(shards...)
	require.NoError(t, err)
	return m
}
