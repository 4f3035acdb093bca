// Package metrics gives each Foreman node its own Prometheus registry (never
// the process-wide default one) and the hooks that feed it: a
// master.Observer for the master's durable facts, a journal commit observer,
// mailbox statistics for the long-lived actors, the HTTP submit timings,
// results consumed, and scrape-time readers of the adaptive pool and the
// cluster's members. protoactor's own actor metrics (OpenTelemetry
// instruments) are exported into the same registry through an OpenTelemetry
// Prometheus exporter, never through protoactor's own :2222 listener.
//
// Nothing under actors/ imports this package: the actors expose hooks and
// the node wires them here.
package metrics
