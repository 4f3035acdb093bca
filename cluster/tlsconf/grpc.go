package tlsconf

import (
	"context"
	"errors"
	"net"

	"google.golang.org/grpc/credentials"
)

// GRPCServerCredentials returns credentials for a gRPC server (protoactor's
// remote: remote.WithServerOptions(grpc.Creds(...))) that require a client
// certificate from the current CA.
func (m *Material) GRPCServerCredentials() credentials.TransportCredentials {
	return credentials.NewTLS(m.ServerConfig())
}

// GRPCClientCredentials returns credentials for gRPC dials
// (remote.WithDialOptions(grpc.WithTransportCredentials(...))): each new
// connection presents the current certificate, trusts only the current CA
// and checks the dialled host against the server's SANs.
func (m *Material) GRPCClientCredentials() credentials.TransportCredentials {
	return &clientCreds{m: m}
}

// clientCreds builds gRPC's TLS credentials for each handshake, so that a
// reloaded CA applies to new connections (credentials.NewTLS alone would
// keep the pool it was given).
type clientCreds struct{ m *Material }

func (c *clientCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	host := authority
	if h, _, err := net.SplitHostPort(authority); err == nil {
		host = h
	}
	return credentials.NewTLS(c.m.ClientConfigFor(host)).ClientHandshake(ctx, authority, conn)
}

func (c *clientCreds) ServerHandshake(net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("tlsconf: client credentials cannot serve; use GRPCServerCredentials")
}

func (c *clientCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

func (c *clientCreds) Clone() credentials.TransportCredentials { return &clientCreds{m: c.m} }

// OverrideServerName is deprecated in gRPC; the dialled host is checked.
func (c *clientCreds) OverrideServerName(string) error { return nil }
