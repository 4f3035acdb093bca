package journal_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/foreman-actors/foreman/actors/persistence"
	"github.com/foreman-actors/foreman/cluster/journal"
)

// secret is the password of the test URLs: no error or String may show it.
const secret = "s3cr3t-pw"

func TestParseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		raw        string
		wantScheme string
		wantPath   string
		wantString string
		wantErr    string // empty: must parse
	}{
		{name: "SQLiteRelative", raw: "sqlite:foreman-data/journal.db", wantScheme: "sqlite", wantPath: "foreman-data/journal.db", wantString: "sqlite:foreman-data/journal.db"},
		{name: "SQLiteAbsolute", raw: "sqlite:/var/lib/foreman/journal.db", wantScheme: "sqlite", wantPath: "/var/lib/foreman/journal.db", wantString: "sqlite:/var/lib/foreman/journal.db"},
		{name: "SQLiteSlashes", raw: "sqlite:///var/lib/j.db", wantScheme: "sqlite", wantPath: "/var/lib/j.db", wantString: "sqlite:/var/lib/j.db"},
		{name: "SQLiteUpperScheme", raw: "SQLITE:j.db", wantScheme: "sqlite", wantPath: "j.db", wantString: "sqlite:j.db"},
		{name: "Postgres", raw: "postgres://foreman@db.example:5432/foreman?sslmode=disable", wantScheme: "postgres",
			wantString: "postgres://foreman@db.example:5432/foreman?sslmode=disable"},
		{name: "PostgresqlPasswordMasked", raw: "postgresql://foreman:" + secret + "@10.0.0.5/foreman", wantScheme: "postgres",
			wantString: "postgresql://foreman:xxxxx@10.0.0.5/foreman"},
		{name: "PostgresPasswordParamMasked", raw: "postgres://foreman@db/foreman?password=" + secret, wantScheme: "postgres",
			wantString: "postgres://foreman@db/foreman?password=xxxxx"},
		{name: "PostgresHostParam", raw: "postgres:///foreman?host=/run/postgresql", wantScheme: "postgres",
			wantString: "postgres:///foreman?host=/run/postgresql"},
		{name: "Empty", raw: "", wantErr: "empty journal URL"},
		{name: "Blank", raw: "  ", wantErr: "empty journal URL"},
		{name: "NoScheme", raw: "journal.db", wantErr: "has no scheme"},
		{name: "UnknownScheme", raw: "mysql://root:" + secret + "@db/foreman", wantErr: `scheme "mysql" is not supported`},
		{name: "SQLiteEmptyPath", raw: "sqlite:", wantErr: "names no file"},
		{name: "SQLiteSlashesOnly", raw: "sqlite://", wantErr: "names no file"},
		{name: "PostgresNoHost", raw: "postgres:///foreman", wantErr: "names no host"},
		{name: "PostgresOpaque", raw: "postgres:db/foreman", wantErr: "with the two slashes"},
		{name: "PostgresBadPort", raw: "postgres://foreman:" + secret + "@db:notaport/foreman", wantErr: "not a valid PostgreSQL URL"},
		{name: "PostgresBadEscape", raw: "postgres://foreman:" + secret + "@db/%zz", wantErr: "not a valid PostgreSQL URL"},
		{name: "PostgresBadParam", raw: "postgres://foreman:" + secret + "@db/foreman?sslmode=sometimes", wantErr: "postgres://foreman:xxxxx@db/foreman"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			loc, err := journal.ParseURL(tt.raw)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, persistence.ErrInvalid)
				require.ErrorContains(t, err, tt.wantErr)
				require.NotContains(t, err.Error(), secret, "the error shows the password")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantScheme, loc.Scheme)
			require.Equal(t, tt.wantPath, loc.Path)
			require.Equal(t, tt.wantString, loc.String())
			require.NotContains(t, loc.String(), secret)
		})
	}
}

func TestOpenURL(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		loc, err := journal.ParseURL("sqlite:" + filepath.Join(t.TempDir(), "j.db"))
		require.NoError(t, err)
		j, err := journal.Open(context.Background(), loc)
		require.NoError(t, err)
		require.NoError(t, j.Close())
	})
	t.Run("PostgresUnreachableMasksPassword", func(t *testing.T) {
		t.Parallel()
		// A port nothing listens on: the connection is refused at once.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		loc, err := journal.ParseURL("postgres://foreman:" + secret + "@" + addr + "/foreman?sslmode=disable")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = journal.Open(ctx, loc)
		require.Error(t, err)
		require.ErrorContains(t, err, addr)
		require.NotContains(t, err.Error(), secret, "the error shows the password")
	})
	t.Run("ZeroLocation", func(t *testing.T) {
		t.Parallel()
		_, err := journal.Open(context.Background(), journal.Location{})
		require.ErrorIs(t, err, persistence.ErrInvalid)
	})
}
