package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

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

// ShardsStream is the journal stream where a sharded cluster recorded its
// number of shards before ConfigStream recorded it with the rate limits:
// one Int64Value. It is only read now, for a journal written then.
const ShardsStream = "foreman/shards"

// ErrShardsMismatch means the node's number of shards is not the one its
// journal records: work would be looked for in the wrong shards. Changing
// the number of shards of a journal is not supported yet.
var ErrShardsMismatch = errors.New("node: the number of shards differs from the journal's")

// recordedShards returns the number of shards j records (0: none) and the
// last sequence number of its stream.
func recordedShards(ctx context.Context, j persistence.Journal) (n int, last int64, err error) {
	err = j.Load(ctx, ShardsStream, 0, func(e persistence.Event) error {
		last = e.Seq
		if v, ok := e.Msg.(*wrapperspb.Int64Value); ok && n == 0 {
			n = int(v.GetValue())
		}
		return nil
	})
	return n, last, err
}

// streamUsed reports whether stream holds an event or a snapshot.
func streamUsed(ctx context.Context, j persistence.Journal, stream string) (bool, error) {
	if _, ok, err := j.LoadSnapshot(ctx, stream); err != nil || ok {
		return ok, err
	}
	used := false
	errStop := errors.New("stop")
	err := j.Load(ctx, stream, 0, func(persistence.Event) error {
		used = true
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return false, err
	}
	return used, nil
}
