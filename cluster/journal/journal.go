// The package documentation is in doc.go.

package journal

import "github.com/foreman-actors/foreman/actors/persistence"

// The journal port (persistence.Journal, Event, Snapshot and the sentinel
// errors) is defined where it is used, in actors/persistence; the backends
// of this package implement it.
var (
	_ persistence.Journal = (*Memory)(nil)
	_ persistence.Journal = (*SQLite)(nil)
	_ persistence.Journal = (*Postgres)(nil)
)
