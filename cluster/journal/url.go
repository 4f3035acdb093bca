package journal

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/foreman-actors/foreman/actors/persistence"
)

// Journal URL schemes (see ParseURL).
const (
	SchemeSQLite   = "sqlite"
	SchemePostgres = "postgres"
)

// URLHelp says which journal URLs ParseURL takes, for error messages and
// flag help.
const URLHelp = "sqlite:PATH or postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=...]"

// maskedPassword replaces a password wherever a Location is printed.
const maskedPassword = "xxxxx"

// Location is where a journal lives, as parsed from a journal URL by
// ParseURL. Its String masks the password, so it is safe to log.
type Location struct {
	// Scheme is SchemeSQLite or SchemePostgres.
	Scheme string
	// Path is the SQLite file (SchemeSQLite).
	Path string
	// dsn is the PostgreSQL URL as given, password included (SchemePostgres).
	dsn string
}

// SQLiteLocation is the Location of the SQLite file at path.
func SQLiteLocation(path string) Location { return Location{Scheme: SchemeSQLite, Path: path} }

// ParseURL parses and checks a journal URL without opening anything:
//
//	sqlite:PATH              a SQLite file (sqlite://PATH is the same)
//	postgres://...           a PostgreSQL database, as pgx reads the URL
//	postgresql://...         the same
//
// Errors wrap persistence.ErrInvalid, say what is wrong and never contain
// the URL's password.
func ParseURL(raw string) (Location, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return Location{}, fmt.Errorf("%w: empty journal URL (want %s)", persistence.ErrInvalid, URLHelp)
	}
	scheme, rest, ok := strings.Cut(raw, ":")
	if !ok {
		return Location{}, fmt.Errorf("%w: journal URL %q has no scheme (want %s)", persistence.ErrInvalid, raw, URLHelp)
	}
	switch strings.ToLower(scheme) {
	case SchemeSQLite:
		path := strings.TrimPrefix(rest, "//")
		if path == "" {
			return Location{}, fmt.Errorf("%w: journal URL %q names no file (want sqlite:PATH, e.g. sqlite:./foreman-data/journal.db)", persistence.ErrInvalid, raw)
		}
		return SQLiteLocation(path), nil
	case "postgres", "postgresql":
		return parsePostgres(raw)
	default:
		// Only the scheme is echoed: an unknown URL may carry a password.
		return Location{}, fmt.Errorf("%w: journal URL scheme %q is not supported (want %s)", persistence.ErrInvalid, scheme, URLHelp)
	}
}

func parsePostgres(raw string) (Location, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the whole URL, password included: keep only
		// what it says is wrong.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Location{}, fmt.Errorf("%w: journal URL is not a valid PostgreSQL URL: %w (want %s)", persistence.ErrInvalid, err, URLHelp)
	}
	loc := Location{Scheme: SchemePostgres, dsn: raw}
	if u.Opaque != "" {
		return Location{}, fmt.Errorf("%w: journal URL %s: write postgres://HOST/DB, with the two slashes", persistence.ErrInvalid, loc)
	}
	if u.Host == "" && u.Query().Get("host") == "" {
		return Location{}, fmt.Errorf("%w: journal URL %s names no host (want %s)", persistence.ErrInvalid, loc, URLHelp)
	}
	if _, err := pgx.ParseConfig(raw); err != nil {
		// pgx's own message quotes the URL (redacted on a best-effort
		// basis): keep only its cause.
		cause := "a parameter pgx does not accept"
		if inner := errors.Unwrap(err); inner != nil {
			cause = inner.Error()
		}
		return Location{}, fmt.Errorf("%w: journal URL %s: %s (want %s)", persistence.ErrInvalid, loc, cause, URLHelp)
	}
	return loc, nil
}

// String is the URL with its password masked: sqlite:PATH, or
// postgres://user:xxxxx@host/db.
func (l Location) String() string {
	switch l.Scheme {
	case SchemeSQLite:
		return SchemeSQLite + ":" + l.Path
	case SchemePostgres:
		return RedactURL(l.dsn)
	default:
		return "(no journal URL)"
	}
}

// RedactURL returns raw with any password (user info or a password query
// parameter) replaced by xxxxx. A string that does not parse as a URL is
// replaced by its scheme alone.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		scheme, _, _ := strings.Cut(raw, ":")
		return scheme + "://(unparsable URL)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), maskedPassword)
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", maskedPassword)
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Open opens the journal at loc: OpenSQLite or OpenPostgres with opts. The
// caller closes it. ctx bounds connecting to PostgreSQL.
func Open(ctx context.Context, loc Location, opts ...Option) (persistence.Journal, error) {
	switch loc.Scheme {
	case SchemeSQLite:
		return OpenSQLite(loc.Path, opts...)
	case SchemePostgres:
		return OpenPostgres(ctx, loc.dsn, opts...)
	default:
		return nil, fmt.Errorf("%w: journal location has no scheme (parse it with ParseURL)", persistence.ErrInvalid)
	}
}
