package history

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// migrationFiles holds the schema migrations: migrations/DIALECT/NNNN_name.sql,
// applied in the order of their numbers.
//
//go:embed migrations
var migrationFiles embed.FS

// migrationSource is where the migrations come from: the numbered SQL
// files of each dialect and the numbered steps written in Go, which share
// one numbering (a version is one or the other).
type migrationSource struct {
	files fs.FS
	steps []goMigration
}

// builtinMigrations are this llmchaos's migrations.
var builtinMigrations = migrationSource{files: migrationFiles, steps: goMigrations}

// goMigration is a numbered migration written in Go, for every dialect: a
// change of data that SQL alone cannot make (one that reads the compressed
// reports). It runs in the migrations' transaction, under their lock, on
// the connection q, and is recorded in the migrations table as a SQL one.
type goMigration struct {
	version int
	name    string
	run     func(ctx context.Context, q execer, d dialect) error
}

// goMigrations are the migrations written in Go.
var goMigrations = []goMigration{
	{version: 2, name: "unscored_runs_without_score", run: clearUnscoredZeros},
}

// migration is one numbered migration of a dialect: a SQL file's
// statements, or a Go step (run).
type migration struct {
	version int
	name    string
	sql     string
	run     func(ctx context.Context, q execer, d dialect) error
}

var migrationName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// migrations reads the migrations of dialect d from src, in order: its SQL
// files (src.files, rooted where "migrations" is) and its Go steps; numbers
// must run 1, 2, 3 … without a gap, each taken once.
func migrations(src migrationSource, d dialect) ([]migration, error) {
	dir := path.Join("migrations", d.name)
	entries, err := fs.ReadDir(src.files, dir)
	if err != nil {
		return nil, fmt.Errorf("history migrations %s: %w", dir, err)
	}
	var out []migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("history migrations %s: %q is not named NNNN_name.sql", dir, e.Name())
		}
		b, err := fs.ReadFile(src.files, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("history migrations: %w", err)
		}
		v, _ := strconv.Atoi(m[1])
		out = append(out, migration{version: v, name: m[2], sql: string(b)})
	}
	for _, g := range src.steps {
		out = append(out, migration{version: g.version, name: g.name, run: g.run})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i, m := range out {
		if i > 0 && m.version == out[i-1].version {
			return nil, fmt.Errorf("history migrations %s: two migrations numbered %04d (%s and %s)", dir, m.version, out[i-1].name, m.name)
		}
		if m.version != i+1 {
			return nil, fmt.Errorf("history migrations %s: want migration %04d, found %04d_%s", dir, i+1, m.version, m.name)
		}
	}
	return out, nil
}

// statements splits a migration into its statements: each ends with ";"
// at the end of a line. "--" comment lines are dropped.
func statements(src string) []string {
	var out []string
	var cur strings.Builder
	for line := range strings.Lines(src) {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// migrate brings db's schema up to date with the migrations of d in src,
// in one transaction under a lock (see dialect.begin and dialect.lock), so
// that processes opening one store at once apply each migration once. It
// returns the versions it applied (none when the schema was current). A
// schema newer than this program knows is an error: an older llmchaos
// must not write to a store a newer one has changed.
func migrate(ctx context.Context, db *sql.DB, d dialect, src migrationSource) (applied []int, err error) {
	ms, err := migrations(src, d)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("history: connect: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, d.begin); err != nil {
		return nil, fmt.Errorf("history: start migrations: %w", err)
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if d.lock != "" {
		if _, err := conn.ExecContext(ctx, d.lock); err != nil {
			return nil, fmt.Errorf("history: lock for migrations: %w", err)
		}
	}
	if _, err := conn.ExecContext(ctx, d.migrationsTable); err != nil {
		return nil, fmt.Errorf("history: create the migrations table: %w", err)
	}
	done, err := appliedVersions(ctx, conn)
	if err != nil {
		return nil, err
	}
	if n := len(done); n > 0 && done[n-1] > len(ms) {
		return nil, fmt.Errorf("history: the store's schema is at version %d, newer than this llmchaos knows (%d): use a newer llmchaos with it", done[n-1], len(ms))
	}
	for _, m := range ms {
		if slices.Contains(done, m.version) {
			continue
		}
		if m.run != nil {
			if err := m.run(ctx, conn, d); err != nil {
				return nil, fmt.Errorf("history: migration %04d_%s (%s): %w", m.version, m.name, d.name, err)
			}
		}
		for i, stmt := range statements(m.sql) {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return nil, fmt.Errorf("history: migration %04d_%s (%s), statement %d: %w", m.version, m.name, d.name, i+1, err)
			}
		}
		if _, err := conn.ExecContext(ctx, d.rebind(`INSERT INTO llmchaos_schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
			m.version, m.name, d.timeArg(time.Now())); err != nil {
			return nil, fmt.Errorf("history: record migration %04d_%s: %w", m.version, m.name, err)
		}
		applied = append(applied, m.version)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return nil, fmt.Errorf("history: commit migrations: %w", err)
	}
	return applied, nil
}

// appliedVersions lists the versions in the migrations table, in order.
func appliedVersions(ctx context.Context, q execer) ([]int, error) {
	rows, err := q.QueryContext(ctx, `SELECT version FROM llmchaos_schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("history: read the migrations table: %w", err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("history: read the migrations table: %w", err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history: read the migrations table: %w", errors.Join(err, rows.Close()))
	}
	return out, nil
}
