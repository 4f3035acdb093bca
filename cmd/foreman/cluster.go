package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
)

// runClusterNode runs a backend, frontend or worker node of a cluster.
func runClusterNode(ctx context.Context, a nodeArgs, stdout, stderr io.Writer, log *slog.Logger) int {
	fmt.Fprintf(stderr, "foreman: %s nodes (port %d) are not available in this build yet; run `foreman` with no port for backend, frontend and worker in one process\n", a.role, a.port)
	return 2
}
