package protolog_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/cluster/protolog"
)

// rec is a log record reduced to what the tests compare: level, message and
// attributes as "key=value".
type rec struct {
	level slog.Level
	msg   string
	attrs string
}

func (r rec) String() string { return fmt.Sprintf("%v %q %s", r.level, r.msg, r.attrs) }

// recorder is a slog.Handler that keeps what it is given, at or above level.
type recorder struct {
	level slog.Level
	mu    sync.Mutex
	got   []rec // guarded by mu
}

func (h *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	var attrs []string
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a.Key+"="+a.Value.String())
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, rec{level: r.Level, msg: r.Message, attrs: strings.Join(attrs, " ")})
	return nil
}

func (h *recorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recorder) WithGroup(string) slog.Handler      { return h }

func (h *recorder) records() []rec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]rec(nil), h.got...)
}

// in is a record protoactor logs: level, message and key-value attributes.
type in struct {
	level slog.Level
	msg   string
	args  []any
}

const (
	peerA = "127.0.0.1:2552"
	peerB = "127.0.0.1:40001"
)

var (
	errRefused = errors.New(`rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:2552: connect: connection refused"`)
	errClosing = errors.New("rpc error: code = Canceled desc = grpc: the client connection is closing")
)

func failConnect(addr string, retry int) in {
	return in{slog.LevelError, "EndpointWriter failed to connect", []any{"address", addr, "error", errRefused, "retry", retry}}
}

func TestHandler(t *testing.T) {
	t.Parallel()
	debug, info := slog.LevelDebug, slog.LevelInfo
	tests := []struct {
		name    string
		level   slog.Level // of the node's handler
		members []string   // told with SetMembers first
		in      []in
		want    []rec
	}{
		{
			name:  "InfoIsDebug",
			level: debug,
			in: []in{
				{slog.LevelInfo, "Started EndpointWriter. connecting", []any{"address", peerA}},
				{slog.LevelDebug, "Actor stays", []any{"identity", "master"}},
			},
			want: []rec{{debug, "Started EndpointWriter. connecting", "address=" + peerA}},
		},
		{
			name:  "LibraryDebugBelowDebug",
			level: protolog.LevelLibraryDebug,
			in:    []in{{slog.LevelDebug, "Actor stays", []any{"identity", "master"}}},
			want:  []rec{{protolog.LevelLibraryDebug, "Actor stays", "identity=master"}},
		},
		{
			name:  "InfoHiddenAtInfo",
			level: info,
			in:    []in{{slog.LevelInfo, "Updated ClusterTopology", []any{"members", 2}}},
		},
		{
			name:  "WarnAndOtherErrorsUnchanged",
			level: info,
			in: []in{
				{slog.LevelWarn, "Request retried but failed", []any{"identity", "master"}},
				{slog.LevelError, "Invalid kind", []any{"kind", "x"}},
			},
			want: []rec{
				{slog.LevelWarn, "Request retried but failed", "identity=master"},
				{slog.LevelError, "Invalid kind", "kind=x"},
			},
		},
		{
			name:    "LostPeerOneWarn",
			level:   info,
			members: []string{peerA},
			in: []in{
				{slog.LevelError, "EndpointWriter lost connection", []any{"address", peerA, "error", errRefused}},
				failConnect(peerA, 0), failConnect(peerA, 1), failConnect(peerA, 2),
				{slog.LevelError, "EndpointWriter failed to create receive stream", []any{"address", peerA, "error", errRefused}},
			},
			want: []rec{{slog.LevelWarn, protolog.MsgLost, "address=" + peerA + " error=" + errRefused.Error() + " event=EndpointWriter lost connection"}},
		},
		{
			name:    "LostClientNotWarned",
			level:   info,
			members: []string{peerA},
			in: []in{
				{slog.LevelError, "EndpointWriter lost connection", []any{"address", peerB, "error", errRefused}},
				failConnect(peerB, 0), failConnect(peerB, 1),
			},
			want: []rec{{slog.LevelWarn, protolog.MsgLost, "address=" + peerB + " error=" + errRefused.Error() + " retry=0 event=EndpointWriter failed to connect"}},
		},
		{
			name:    "MemberThatLeftNotWarned",
			level:   debug,
			members: []string{peerB},
			in:      []in{{slog.LevelError, "EndpointWriter lost connection", []any{"address", peerA, "error", errRefused}}},
			want:    []rec{{debug, "EndpointWriter lost connection", "address=" + peerA + " error=" + errRefused.Error()}},
		},
		{
			name:  "RetriesAtDebug",
			level: debug,
			in:    []in{failConnect(peerA, 0), failConnect(peerA, 1)},
			want: []rec{
				{slog.LevelWarn, protolog.MsgLost, "address=" + peerA + " error=" + errRefused.Error() + " retry=0 event=EndpointWriter failed to connect"},
				{debug, "EndpointWriter failed to connect", "address=" + peerA + " error=" + errRefused.Error() + " retry=1"},
			},
		},
		{
			name:  "OneWarnPerPeer",
			level: info,
			in:    []in{failConnect(peerA, 0), failConnect(peerB, 0), failConnect(peerA, 1), failConnect(peerB, 1)},
			want: []rec{
				{slog.LevelWarn, protolog.MsgLost, "address=" + peerA + " error=" + errRefused.Error() + " retry=0 event=EndpointWriter failed to connect"},
				{slog.LevelWarn, protolog.MsgLost, "address=" + peerB + " error=" + errRefused.Error() + " retry=0 event=EndpointWriter failed to connect"},
			},
		},
		{
			name:  "ReconnectedThenLostAgain",
			level: info,
			in: []in{
				failConnect(peerA, 0),
				{slog.LevelInfo, "EndpointWriter connected", []any{"address", peerA, "cost", time.Millisecond}},
				failConnect(peerA, 0), failConnect(peerA, 1),
			},
			want: []rec{
				{slog.LevelWarn, protolog.MsgLost, "address=" + peerA + " error=" + errRefused.Error() + " retry=0 event=EndpointWriter failed to connect"},
				{slog.LevelWarn, protolog.MsgLost, "address=" + peerA + " error=" + errRefused.Error() + " retry=0 event=EndpointWriter failed to connect"},
			},
		},
		{
			name:  "LeavingPeerNotLost",
			level: info,
			in: []in{
				{slog.LevelInfo, "EndpointWriter got DisconnectRequest form remote", []any{"address", peerA}},
				failConnect(peerA, 0), failConnect(peerA, 1),
				failConnect(peerB, 0),
			},
			want: []rec{{slog.LevelWarn, protolog.MsgLost, "address=" + peerB + " error=" + errRefused.Error() + " retry=0 event=EndpointWriter failed to connect"}},
		},
		{
			name:  "OwnCloseIsDebug",
			level: debug,
			in: []in{
				{slog.LevelError, "EndpointWriter lost connection", []any{"address", peerA, "error", errClosing}},
				{slog.LevelError, "EndpointWriter error when closing the stream", []any{"error", errClosing}},
				{slog.LevelError, "EndpointReader failed to send disconnection message", []any{"error", errClosing}},
			},
			want: []rec{
				{debug, "EndpointWriter lost connection", "address=" + peerA + " error=" + errClosing.Error()},
				{debug, "EndpointWriter error when closing the stream", "error=" + errClosing.Error()},
				{debug, "EndpointReader failed to send disconnection message", "error=" + errClosing.Error()},
			},
		},
		{
			name:  "OwnCloseThenRealLoss",
			level: info,
			in: []in{
				{slog.LevelError, "EndpointWriter lost connection", []any{"address", peerA, "error", errClosing}},
				failConnect(peerA, 0),
			},
			want: []rec{{slog.LevelWarn, protolog.MsgLost, "address=" + peerA + " error=" + errRefused.Error() + " retry=0 event=EndpointWriter failed to connect"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := &recorder{level: tt.level}
			h := protolog.NewHandler(got)
			h.SetMembers(tt.members)
			log := slog.New(h)
			for _, r := range tt.in {
				log.Log(context.Background(), r.level, r.msg, r.args...)
			}
			require.Equal(t, tt.want, got.records())
		})
	}
}

// TestHandlerDerivedShareState: loggers derived with With (protoactor adds
// attributes per component) report a lost peer once between them.
func TestHandlerDerivedShareState(t *testing.T) {
	t.Parallel()
	got := &recorder{level: slog.LevelInfo}
	base := slog.New(protolog.NewHandler(got)).With("lib", "protoactor")
	a, b := base.With("system", "a"), base.WithGroup("g")
	for i := range 3 {
		a.Error("EndpointWriter failed to connect", "address", peerA, "error", errRefused, "retry", i)
		b.Error("EndpointWriter failed to connect", "address", peerA, "error", errRefused, "retry", i)
	}
	require.Len(t, got.records(), 1)
	require.Equal(t, protolog.MsgLost, got.records()[0].msg)
}

// TestHandlerEnabled: the library's Debug is built only when the node logs
// it; Info and above always reach the handler, which learns from them.
func TestHandlerEnabled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	atInfo := protolog.NewHandler(&recorder{level: slog.LevelInfo})
	require.False(t, atInfo.Enabled(ctx, slog.LevelDebug))
	require.True(t, atInfo.Enabled(ctx, slog.LevelInfo))
	atDebug := protolog.NewHandler(&recorder{level: slog.LevelDebug})
	require.False(t, atDebug.Enabled(ctx, slog.LevelDebug), "library Debug is below the node's Debug")
	atAll := protolog.NewHandler(&recorder{level: protolog.LevelLibraryDebug})
	require.True(t, atAll.Enabled(ctx, slog.LevelDebug))
}

// TestHandlerManyPeers: a node that loses many short-lived workers keeps a
// bounded memory of them and still warns once for each new one.
func TestHandlerManyPeers(t *testing.T) {
	t.Parallel()
	got := &recorder{level: slog.LevelWarn}
	log := slog.New(protolog.NewHandler(got))
	const n = 3000
	for i := range n {
		log.Error("EndpointWriter failed to connect", "address", fmt.Sprintf("127.0.0.1:%d", 10000+i), "error", errRefused, "retry", 0)
	}
	require.Len(t, got.records(), n)
}
