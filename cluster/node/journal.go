package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
)

// DefaultJournalOpenTimeout bounds how long a node waits for its journal
// at start (connecting to PostgreSQL, creating its tables): a server that
// does not answer fails the start instead of hanging it.
const DefaultJournalOpenTimeout = 15 * time.Second

// journalLocation is where a node's journal lives: rawURL when set (see
// journal.ParseURL), else the SQLite file JournalFile in dataDir (or
// DefaultDataDir).
func journalLocation(rawURL, dataDir string) (journal.Location, error) {
	if rawURL != "" {
		loc, err := journal.ParseURL(rawURL)
		if err != nil {
			return journal.Location{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		return loc, nil
	}
	if dataDir == "" {
		dataDir = DefaultDataDir
	}
	return journal.SQLiteLocation(filepath.Join(dataDir, JournalFile)), nil
}

// openJournal opens the journal at loc for a node. A SQLite file's
// directory is created if missing. Errors name the location with its
// password masked and say what to check.
func openJournal(ctx context.Context, loc journal.Location, log *slog.Logger, opts ...journal.Option) (persistence.Journal, error) {
	if loc.Scheme == journal.SchemeSQLite {
		dir := filepath.Dir(loc.Path)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("node: cannot create data directory %s: %w (pass --data DIR, or --journal sqlite:PATH, with a writable directory)", dir, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultJournalOpenTimeout)
	defer cancel()
	j, err := journal.Open(ctx, loc, append([]journal.Option{journal.WithLogger(log)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("node: cannot open the journal %s: %w", loc, err)
	}
	return j, nil
}

// journalDesc says in a log line which journal a node uses (the password
// masked).
func journalDesc(given persistence.Journal, loc journal.Location) string {
	if given != nil {
		return "(given in the configuration)"
	}
	return loc.String()
}
