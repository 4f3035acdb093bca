package main

import (
	"context"
	"log/slog"

	"github.com/foreman-actors/foreman/cluster/node"
)

// startHTTP serves the HTTP API of a frontend node on addr.
func startHTTP(ctx context.Context, n *node.ClusterNode, addr string, log *slog.Logger) (func(context.Context) error, error) {
	return func(context.Context) error { return nil }, nil
}
