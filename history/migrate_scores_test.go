package history

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/llmchaos/llmchaos/internal/pgtest"
	"github.com/llmchaos/llmchaos/report"
)

// TestUnscoredZerosBecomeNoScore: a store written before scoreOf read a
// null score as none holds score 0 for runs their report leaves unscored;
// opening it with this llmchaos clears those scores once (migration 2, in
// SQLite and in a real PostgreSQL server), keeps the 0 of a run its report
// scores 0 and the 0 a caller gave, and a later Open does not run the step
// again. Two stores opened at once on such a store run it once between
// them.
func TestUnscoredZerosBecomeNoScore(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, loc string)
	}{
		{"OneOpen", testUnscoredZerosOneOpen},
		{"TwoOpensAtOnce", testUnscoredZerosTwoOpens},
	}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { c.run(t, filepath.Join(t.TempDir(), "history.db")) })
		}
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		srv := pgtest.Start(t)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { c.run(t, srv.NewDatabase(t)) })
		}
	})
}

// oldRuns are the ids of the runs storeAtVersion1 writes.
type oldRuns struct {
	unscored int64 // a signal cut it short: report score null, stored 0
	zeroed   int64 // a failed revert zeroed its score: report score 0
	given    int64 // its report has no score; the caller gave 0
	scored   int64 // report score 72.5
}

// storeAtVersion1 makes a store at loc with schema version 1 only and
// writes to it what an llmchaos before the fix did, returning the runs and
// the database, open without migrating.
func storeAtVersion1(t *testing.T, loc string) (oldRuns, *sql.DB, dialect) {
	t.Helper()
	ctx := t.Context()
	d, dsn, shown, err := resolve(loc)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(d.driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	initSQL, err := migrationFiles.ReadFile("migrations/" + d.name + "/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	v1 := migrationSource{files: fstest.MapFS{"migrations/" + d.name + "/0001_init.sql": {Data: initSQL}}}
	if applied, err := migrate(ctx, db, d, v1); err != nil || !slices.Equal(applied, []int{1}) {
		t.Fatalf("schema version 1: applied %v, %v", applied, err)
	}
	old := &sqlStore{db: db, d: d, where: shown}
	f64 := func(v float64) *float64 { return &v }
	write := func(name string, score *report.Score, given *float64, stored float64) int64 {
		doc := synthRun(t, synth{seed: 5, n: 60, aborted: score != nil && score.Unscored == report.AbortSignal})
		doc.Score = score
		run, err := FromDocument(doc, RecordOptions{ExitCode: 98, Score: given})
		if err != nil {
			t.Fatal(err)
		}
		run.Score = f64(stored) // as the recorder before the fix stored it
		id, err := old.Insert(ctx, run)
		if err != nil {
			t.Fatalf("%s run: %v", name, err)
		}
		return id
	}
	runs := oldRuns{
		unscored: write("unscored", &report.Score{Unscored: report.AbortSignal}, nil, 0),
		zeroed:   write("zeroed", &report.Score{Value: f64(0), Zeroed: report.ScoreZeroRevertFailed}, nil, 0),
		given:    write("given", nil, f64(0), 0),
		scored:   write("scored", &report.Score{Value: f64(72.5)}, nil, 72.5),
	}
	return runs, db, d
}

// checkScores compares the stored scores of runs with want (nil: none).
func checkScores(t *testing.T, s Store, runs oldRuns, wantUnscored *float64) {
	t.Helper()
	zero, scored := 0.0, 72.5
	for _, c := range []struct {
		name string
		id   int64
		want *float64
	}{
		{"unscored", runs.unscored, wantUnscored},
		{"zeroed by a failed revert", runs.zeroed, &zero},
		{"given 0 by the caller", runs.given, &zero},
		{"scored", runs.scored, &scored},
	} {
		r, err := s.Get(t.Context(), c.id, WithSummary)
		if err != nil {
			t.Fatal(err)
		}
		if show(r.Score) != show(c.want) {
			t.Errorf("%s run: score %s, want %s", c.name, show(r.Score), show(c.want))
		}
	}
}

func show(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprint(*v)
}

// checkMigrated checks that the migrations table records 1 and 2, with
// 2's name.
func checkMigrated(t *testing.T, db *sql.DB, d dialect) {
	t.Helper()
	versions, err := appliedVersions(t.Context(), db)
	if err != nil || !slices.Equal(versions, []int{1, 2}) {
		t.Fatalf("migrations table: %v, %v; want [1 2]", versions, err)
	}
	var name string
	if err := db.QueryRowContext(t.Context(), d.rebind(`SELECT name FROM llmchaos_schema_migrations WHERE version = ?`), 2).Scan(&name); err != nil {
		t.Fatal(err)
	}
	if name != "unscored_runs_without_score" {
		t.Errorf("migration 2 recorded as %q, want unscored_runs_without_score", name)
	}
}

func testUnscoredZerosOneOpen(t *testing.T, loc string) {
	runs, db, d := storeAtVersion1(t, loc)
	checkScores(t, open(t, loc), runs, nil)
	checkMigrated(t, db, d)

	// A later Open does not run the step again: a 0 written to the
	// unscored run since (as an old llmchaos sharing the store would)
	// stays.
	if _, err := db.ExecContext(t.Context(), d.rebind(`UPDATE llmchaos_runs SET score = 0 WHERE id = ?`), runs.unscored); err != nil {
		t.Fatal(err)
	}
	zero := 0.0
	checkScores(t, open(t, loc), runs, &zero)
	checkMigrated(t, db, d)
}

func testUnscoredZerosTwoOpens(t *testing.T, loc string) {
	runs, db, d := storeAtVersion1(t, loc)
	type opened struct {
		s   Store
		err error
	}
	got := make(chan opened, 2)
	for range 2 {
		go func() {
			s, err := Open(t.Context(), loc)
			got <- opened{s, err}
		}()
	}
	var stores []Store
	for range 2 {
		o := <-got
		if o.err != nil {
			t.Errorf("open at once: %v", o.err)
			continue
		}
		stores = append(stores, o.s)
	}
	for _, s := range stores {
		checkScores(t, s, runs, nil)
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
	checkMigrated(t, db, d)
}
