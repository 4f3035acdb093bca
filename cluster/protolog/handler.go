package protolog

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// LevelLibraryDebug is the level protoactor's Debug records are logged at:
// below Debug, so that --log-level debug shows the library's routine work
// (its Info) without its per-message tracing; --log-level debug-4 shows all.
const LevelLibraryDebug = slog.LevelDebug - 4

// MsgLost is the message of the one Warn record logged when the connection
// to a node is lost.
const MsgLost = "lost the connection to a node"

// maxPeers bounds the addresses remembered; workers on random ports come
// and go, and a lost address is otherwise remembered until it reconnects.
const maxPeers = 1024

// protoactor's message texts (remote/endpoint_writer.go and
// endpoint_reader.go of the pinned version) that the handler recognises.
var (
	// connectionFailures mean this node could not reach, or lost, the
	// node at the record's "address". protoactor logs them at Error once
	// per connection attempt.
	connectionFailures = map[string]bool{
		"EndpointWriter failed to connect":                  true,
		"EndpointWriter failed to create receive stream":    true,
		"EndpointWriter failed to send connect request":     true,
		"EndpointWriter failed to receive connect response": true,
		msgLostConnection: true,
	}
	// connectionClosing are failures while this node closes its own
	// connections (it is stopping): not worth more than Debug.
	connectionClosing = map[string]bool{
		"EndpointWriter error when closing the stream":        true,
		"EndpointWriter error when closing the client conn":   true,
		"EndpointReader failed to send disconnection message": true,
	}
	// msgLostConnection means an established connection to "address"
	// ended other than by a DisconnectRequest: the peer stopped, gracefully
	// or not, or the network failed.
	msgLostConnection = "EndpointWriter lost connection"
	// msgConnected means the connection to "address" is up (again).
	msgConnected = "EndpointWriter connected"
	// msgDisconnect means the node at "address" said it is leaving.
	msgDisconnect = "EndpointWriter got DisconnectRequest form remote"
)

// Handler is a slog.Handler that rewrites protoactor-go's records (see the
// package documentation) and passes them to the node's handler. Handlers
// derived with WithAttrs and WithGroup share what they know about peers.
type Handler struct {
	next  slog.Handler
	peers *peers
}

var _ slog.Handler = (*Handler)(nil)

// NewHandler returns a Handler that passes rewritten records to next.
func NewHandler(next slog.Handler) *Handler {
	return &Handler{next: next, peers: &peers{m: make(map[string]peerState)}}
}

// Enabled implements slog.Handler. Info and above are always taken: the
// library's Info and Error records tell the handler when a peer connects or
// leaves, even when they are not logged.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool {
	if l >= slog.LevelInfo {
		return true
	}
	return h.next.Enabled(ctx, libraryLevel(l))
}

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := h.rewrite(r)
	if !h.next.Enabled(ctx, out.Level) {
		return nil
	}
	return h.next.Handle(ctx, out)
}

// SetMembers tells the handler the addresses (host:port) of the cluster's
// members, replacing what it was told before; a node calls it on every
// topology change. A lost connection is reported only for a member: a
// member that left gracefully was dropped from the topology before it
// closed its connections, and clients (frontends, workers) come and go.
// Failed attempts to connect are reported for any address. Before the
// first call no address is a member.
func (h *Handler) SetMembers(addrs []string) {
	h.peers.setMembers(addrs)
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(attrs), peers: h.peers}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), peers: h.peers}
}

// rewrite returns the record to log in place of r.
func (h *Handler) rewrite(r slog.Record) slog.Record {
	addr := stringAttr(r, "address")
	switch r.Message {
	case msgConnected:
		h.peers.connected(addr)
	case msgDisconnect:
		h.peers.leaving(addr)
	}
	out := r
	out.Level = libraryLevel(r.Level)
	switch {
	case connectionClosing[r.Message]:
		out.Level = min(out.Level, slog.LevelDebug)
	case connectionFailures[r.Message]:
		if canceled(r) || (r.Message == msgLostConnection && !h.peers.member(addr)) || !h.peers.lost(addr) {
			out.Level = min(out.Level, slog.LevelDebug)
			return out
		}
		w := slog.NewRecord(r.Time, slog.LevelWarn, MsgLost, r.PC)
		r.Attrs(func(a slog.Attr) bool {
			w.AddAttrs(a)
			return true
		})
		w.AddAttrs(slog.String("event", r.Message))
		return w
	}
	return out
}

// libraryLevel maps a protoactor level onto the node's: Debug below Debug,
// Info to Debug, Warn and Error unchanged.
func libraryLevel(l slog.Level) slog.Level {
	switch {
	case l < slog.LevelInfo:
		return l - 4
	case l < slog.LevelWarn:
		return slog.LevelDebug
	default:
		return l
	}
}

// canceled reports whether the record's error is gRPC code Canceled (the
// text of a gRPC status error says "code = Canceled"): this node closed
// the connection itself.
func canceled(r slog.Record) bool {
	v, ok := attr(r, "error")
	return ok && strings.Contains(v.String(), "code = Canceled")
}

// stringAttr returns the value of the record's attribute key as a string
// ("" when absent).
func stringAttr(r slog.Record, key string) string {
	if v, ok := attr(r, key); ok {
		return v.String()
	}
	return ""
}

// attr returns the resolved value of the record's first attribute key.
func attr(r slog.Record, key string) (v slog.Value, found bool) {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v, found = a.Value.Resolve(), true
		}
		return !found
	})
	return v, found
}

// peerState is what the handler knows of one address.
type peerState uint8

const (
	// peerLost: a failure was reported at Warn; later ones are Debug.
	peerLost peerState = iota + 1
	// peerLeaving: the peer said it is leaving; failures are Debug.
	peerLeaving
)

// peers remembers the addresses that were reported lost or said they are
// leaving, until they connect again.
type peers struct {
	mu      sync.Mutex
	m       map[string]peerState // guarded by mu
	members map[string]bool      // guarded by mu
}

func (p *peers) setMembers(addrs []string) {
	m := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		m[a] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.members = m
}

func (p *peers) member(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.members[addr]
}

// lost records a connection failure to addr and reports whether it is the
// first since addr was last connected (and addr did not say it is leaving).
func (p *peers) lost(addr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, known := p.m[addr]; known {
		return false
	}
	p.put(addr, peerLost)
	return true
}

func (p *peers) leaving(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.put(addr, peerLeaving)
}

func (p *peers) connected(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, addr)
}

// put sets addr's state, forgetting some other address when full.
func (p *peers) put(addr string, s peerState) {
	if _, known := p.m[addr]; !known && len(p.m) >= maxPeers {
		for a := range p.m {
			delete(p.m, a)
			break
		}
	}
	p.m[addr] = s
}
