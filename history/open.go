package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// DefaultPath is where the embedded store lives when no location is given:
// relative to the working directory, so a CI job keeps its history by
// caching this file between runs.
const DefaultPath = ".llmchaos/history.db"

// EnvLocation names the environment variable that, when set, replaces
// DefaultPath as the history the CLI uses without --history: a CI job
// sets it once (to a postgres:// URL, say) for every command.
const EnvLocation = "LLMCHAOS_HISTORY"

// busyTimeoutMs is how long a SQLite writer waits for another process's
// lock on the file before it fails.
const busyTimeoutMs = 15000

// Open opens (creating it if need be) the store at location and brings its
// schema up to date:
//
//   - "" is DefaultPath;
//   - postgres://… or postgresql://… is a PostgreSQL database (the URL as
//     libpq takes it; the password may come from PGPASSWORD or ~/.pgpass);
//   - sqlite:PATH, or any other PATH, is an SQLite file, created with its
//     directory.
func Open(ctx context.Context, location string) (Store, error) {
	return openWith(ctx, location, builtinMigrations)
}

// openWith is Open with the migrations of src (tests make their own).
func openWith(ctx context.Context, location string, src migrationSource) (Store, error) {
	d, dsn, shown, err := resolve(location)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(d.driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", shown, err)
	}
	if d.name == sqliteDialect.name {
		// One connection: a file has one writer at a time anyway, and
		// the store never holds a result set open across another query.
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(4)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("history %s: connect: %w", shown, err)
	}
	if _, err := migrate(ctx, db, d, src); err != nil {
		db.Close()
		return nil, fmt.Errorf("history %s: %w", shown, err)
	}
	return &sqlStore{db: db, d: d, where: shown}, nil
}

// resolve picks the dialect of location and the driver's data source; shown
// is the location as messages may print it (no password).
func resolve(location string) (d dialect, dsn, shown string, err error) {
	switch {
	case strings.HasPrefix(location, "postgres://"), strings.HasPrefix(location, "postgresql://"):
		u, err := url.Parse(location)
		if err != nil {
			return d, "", "", fmt.Errorf("history: %s: not a PostgreSQL URL: %w", redactURL(location), err)
		}
		return postgresDialect, withSSLModeDefault(location, u, os.Getenv("PGSSLMODE")), u.Redacted(), nil
	case strings.Contains(location, "://"):
		return d, "", "", fmt.Errorf("history %q: want a postgres:// URL or a file path for SQLite", redactURL(location))
	}
	p := strings.TrimPrefix(location, "sqlite:")
	if p == "" {
		p = DefaultPath
	}
	if strings.ContainsAny(p, "?#") {
		return d, "", "", fmt.Errorf("history %q: a SQLite path must not hold ? or #", p)
	}
	if dir := filepath.Dir(p); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return d, "", "", fmt.Errorf("history %s: create its directory: %w", p, err)
		}
	}
	dsn = fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", p, busyTimeoutMs)
	return sqliteDialect, dsn, p, nil
}

// withSSLModeDefault is location (parsed as u), with sslmode=prefer added
// when neither it nor PGSSLMODE (envMode) names one: libpq's default (TLS
// when the server offers it, else plain), which the driver's own default,
// require, is not.
func withSSLModeDefault(location string, u *url.URL, envMode string) string {
	q := u.Query()
	if q.Has("sslmode") || envMode != "" {
		return location
	}
	q.Set("sslmode", "prefer")
	v := *u
	v.RawQuery = q.Encode()
	return v.String()
}

// CheckLocation reports a location Open cannot take (a URL of another
// database, a SQLite path holding ? or #), without opening or creating
// anything: for checking flags before a long run.
func CheckLocation(location string) error {
	switch {
	case strings.HasPrefix(location, "postgres://"), strings.HasPrefix(location, "postgresql://"):
		if _, err := url.Parse(location); err != nil {
			return fmt.Errorf("history: %s: not a PostgreSQL URL: %w", redactURL(location), err)
		}
	case strings.Contains(location, "://"):
		return fmt.Errorf("history %q: want a postgres:// URL or a file path for SQLite", redactURL(location))
	case strings.ContainsAny(strings.TrimPrefix(location, "sqlite:"), "?#"):
		return fmt.Errorf("history %q: a SQLite path must not hold ? or #", location)
	}
	return nil
}

// redactURL removes the password of a URL, for messages; text that does not
// parse is cut at its "@".
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	if i := strings.LastIndex(s, "@"); i >= 0 {
		return "…" + s[i:]
	}
	return s
}

// IsNotFound reports whether err says a run is not in the history.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
