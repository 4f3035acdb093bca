package node

import (
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"

	"github.com/foreman-actors/foreman/cluster/tlsconf"
)

// remoteOptions gives protoactor's gRPC remote mutual TLS with m: the
// server requires a certificate from the cluster CA, and every dial
// presents the node's certificate and checks the peer's against the host
// it dials. They replace protoactor's default dial option (WithInsecure),
// so no plain connection is ever made. nil m: protoactor's defaults.
func remoteOptions(m *tlsconf.Material) []remote.ConfigOption {
	if m == nil {
		return nil
	}
	return []remote.ConfigOption{
		remote.WithServerOptions(grpc.Creds(m.GRPCServerCredentials())),
		remote.WithDialOptions(grpc.WithTransportCredentials(m.GRPCClientCredentials())),
	}
}
