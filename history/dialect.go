package history

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	_ "github.com/lib/pq"  // registers database/sql driver "postgres"
	_ "modernc.org/sqlite" // registers database/sql driver "sqlite" (pure Go)
)

// dialect is what differs between the SQL databases a store runs on. The
// store's queries are written once with ? placeholders; rebind turns them
// into the dialect's.
type dialect struct {
	// name is the dialect's name and its migrations' directory.
	name string
	// driver is the database/sql driver name.
	driver string
	// begin opens the migrations' transaction: SQLite's BEGIN IMMEDIATE
	// takes the write lock at once, so two processes migrating one file
	// run one after the other.
	begin string
	// lock, when set, is run first in the migrations' transaction:
	// PostgreSQL's transaction-scoped advisory lock does for a server
	// what BEGIN IMMEDIATE does for a file.
	lock string
	// migrationsTable creates the table of applied migrations.
	migrationsTable string
	// dollar: placeholders are $1, $2, … (else ?).
	dollar bool
	// unixMicros: times are stored as unix microseconds (else as the
	// driver's timestamps).
	unixMicros bool
}

// The dialects.
var (
	sqliteDialect = dialect{
		name: "sqlite", driver: "sqlite", begin: "BEGIN IMMEDIATE",
		migrationsTable: `CREATE TABLE IF NOT EXISTS llmchaos_schema_migrations (
  version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`,
		unixMicros: true,
	}
	postgresDialect = dialect{
		name: "postgres", driver: "postgres", begin: "BEGIN",
		// 0x6c6c6d6368616f73 is "llmchaos".
		lock: "SELECT pg_advisory_xact_lock(7812726016436957043)",
		migrationsTable: `CREATE TABLE IF NOT EXISTS llmchaos_schema_migrations (
  version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)`,
		dollar: true,
	}
)

// rebind rewrites the ? placeholders of query for d. The store's queries
// hold no ? inside string literals.
func (d dialect) rebind(query string) string {
	if !d.dollar {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// timeArg is t as the dialect stores it.
func (d dialect) timeArg(t time.Time) any {
	if d.unixMicros {
		return t.UnixMicro()
	}
	return t.UTC()
}

// dbTime scans a time as either dialect stores it: unix microseconds or a
// driver timestamp. It reads as UTC.
type dbTime struct{ t time.Time }

var _ sql.Scanner = (*dbTime)(nil)

func (d *dbTime) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		d.t = time.UnixMicro(v).UTC()
	case time.Time:
		d.t = v.UTC()
	case nil:
		d.t = time.Time{}
	default:
		return fmt.Errorf("time column holds %T", src)
	}
	return nil
}

// execer is what both *sql.Tx and *sql.Conn offer.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}
