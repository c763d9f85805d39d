package history

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/llmchaos/llmchaos/internal/pgtest"
	"github.com/llmchaos/llmchaos/report"
)

// backend opens fresh, empty stores of one kind, each at its own location.
type backend struct {
	name string
	// location returns a new empty store's location for t.
	location func(t *testing.T) string
}

// TestStoreContract runs the same store tests against SQLite (a temporary
// file) and a real PostgreSQL server (started once, a new database per
// test).
func TestStoreContract(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, loc string)
	}{
		{"RoundTripsEveryField", testRoundTrip},
		{"MigrationsAreIdempotent", testMigrationsIdempotent},
		{"ListsWithSinceAndLimit", testListing},
		{"SelectsComparableRuns", testComparable},
		{"GetUnknownIsNotFound", testNotFound},
	}
	sqlite := backend{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "sub", "history.db") }}
	t.Run(sqlite.name, func(t *testing.T) {
		t.Parallel()
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { c.run(t, sqlite.location(t)) })
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

func open(t *testing.T, loc string) Store {
	t.Helper()
	s, err := Open(t.Context(), loc)
	if err != nil {
		t.Fatalf("open %s: %v", loc, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func insert(t *testing.T, s Store, doc *report.Document, opts RecordOptions) int64 {
	t.Helper()
	id, err := Record(t.Context(), s, doc, opts)
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	return id
}

func testRoundTrip(t *testing.T, loc string) {
	s := open(t, loc)
	doc := synthRun(t, synth{seed: 3, night: 2})
	doc.StartedAt = doc.StartedAt.Add(123456789 * time.Nanosecond) // stores keep µs: the Run too
	score, regressed := 87.5, true
	now := time.Date(2026, 3, 3, 4, 5, 6, 123456000, time.UTC)
	want, err := FromDocument(doc, RecordOptions{ExitCode: 99, Labels: map[string]string{"version": "1.4.2", LabelGitCommit: "abc123"},
		Score: &score, Regressed: &regressed, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	// Every part is there to round-trip.
	if len(want.Thresholds) != 3 || len(want.Phases) < 7 || len(want.Recovery) != 1 || len(want.Histograms) < 7*4 || len(want.Report) == 0 {
		t.Fatalf("synthetic run lacks parts: %d thresholds, %d phases, %d recovery, %d histograms, %d report bytes",
			len(want.Thresholds), len(want.Phases), len(want.Recovery), len(want.Histograms), len(want.Report))
	}
	id, err := s.Insert(t.Context(), want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(t.Context(), id, WithAll)
	if err != nil {
		t.Fatal(err)
	}
	want.ID = id
	for _, d := range diffFields(*got, *want) {
		t.Errorf("round trip: %s", d)
	}
	if !bytes.Equal(got.Report, want.Report) {
		t.Errorf("report differs after the round trip (%d vs %d bytes)", len(got.Report), len(want.Report))
	}
	// The stored report reads back as a full run: its histograms compare.
	back, err := report.Decode(bytes.NewReader(got.Report))
	if err != nil {
		t.Fatal(err)
	}
	if back.Summary().Requests().Sent != doc.Requests.Sent {
		t.Errorf("stored report: %d sent, want %d", back.Summary().Requests().Sent, doc.Requests.Sent)
	}
	// A run without score, regression check or labels keeps them absent.
	bare, err := FromDocument(synthRun(t, synth{seed: 4, night: 3}), RecordOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id2, err := s.Insert(t.Context(), bare)
	if err != nil {
		t.Fatal(err)
	}
	got2, err := s.Get(t.Context(), id2, WithSummary)
	if err != nil {
		t.Fatal(err)
	}
	if got2.Score != nil || got2.Regressed != nil || got2.Labels != nil || got2.Report != nil || got2.Histograms != nil {
		t.Errorf("bare run: score %v, regressed %v, labels %v, report %d bytes, %d histograms; want none (not asked for)",
			got2.Score, got2.Regressed, got2.Labels, len(got2.Report), len(got2.Histograms))
	}
	if id2 <= id {
		t.Errorf("ids %d then %d: want increasing", id, id2)
	}
}

func testMigrationsIdempotent(t *testing.T, loc string) {
	ctx := t.Context()
	for i := range 3 {
		s := open(t, loc) // each Open migrates; the second and third find nothing to do
		if i == 0 {
			insert(t, s, synthRun(t, synth{seed: 1}), RecordOptions{})
		}
	}
	d, dsn, _, err := resolve(loc)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(d.driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	applied, err := migrate(ctx, db, d, builtinMigrations)
	if err != nil || len(applied) != 0 {
		t.Fatalf("migrating a current schema: applied %v, %v; want nothing", applied, err)
	}
	ms, err := migrations(builtinMigrations, d)
	if err != nil {
		t.Fatal(err)
	}
	var all []int
	for _, m := range ms {
		all = append(all, m.version)
	}
	versions, err := appliedVersions(ctx, db)
	if err != nil || !slices.Equal(versions, all) {
		t.Fatalf("migrations table: %v, %v; want %v", versions, err, all)
	}
	// A later migration is applied once, on top, and keeps the data.
	files := fstest.MapFS{}
	names, err := fs.Glob(migrationFiles, "migrations/"+d.name+"/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = &fstest.MapFile{Data: b}
	}
	note := len(all) + 1
	next := migrationSource{files: files, steps: builtinMigrations.steps}
	files[fmt.Sprintf("migrations/%s/%04d_note.sql", d.name, note)] = &fstest.MapFile{
		Data: []byte("-- a column added later\nALTER TABLE llmchaos_runs ADD COLUMN note TEXT;\n")}
	for i, want := range [][]int{{note}, nil} {
		applied, err := migrate(ctx, db, d, next)
		if err != nil || !slices.Equal(applied, want) {
			t.Fatalf("migration round %d: applied %v, %v; want %v", i, applied, err, want)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM llmchaos_runs WHERE note IS NULL").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after the note migration: %d runs, %v; want the 1 recorded", n, err)
	}
	// This llmchaos knows fewer migrations: it refuses the newer store.
	if _, err := migrate(ctx, db, d, builtinMigrations); err == nil {
		t.Fatal("an llmchaos that knows fewer migrations than the store has: no error")
	}
	// A numbering gap is refused before anything is applied.
	gap := fstest.MapFS{"migrations/" + d.name + "/0001_a.sql": {Data: []byte("SELECT 1;")}, "migrations/" + d.name + "/0003_c.sql": {Data: []byte("SELECT 1;")}}
	if _, err := migrations(migrationSource{files: gap}, d); err == nil {
		t.Fatal("migrations 1 and 3: no error for the gap")
	}
	// So is a Go step numbered as a SQL file, and one that leaves a gap.
	one := fstest.MapFS{"migrations/" + d.name + "/0001_a.sql": {Data: []byte("SELECT 1;")}}
	noop := func(context.Context, execer, dialect) error { return nil }
	for _, steps := range [][]goMigration{{{version: 1, name: "b", run: noop}}, {{version: 3, name: "c", run: noop}}} {
		if _, err := migrations(migrationSource{files: one, steps: steps}, d); err == nil {
			t.Errorf("SQL migration 1 and Go step %d: no error", steps[0].version)
		}
	}
}

func testListing(t *testing.T, loc string) {
	s := open(t, loc)
	ctx := t.Context()
	var ids []int64
	for night := range 6 {
		name := "alpha"
		if night%3 == 2 {
			name = "beta"
		}
		ids = append(ids, insert(t, s, synthRun(t, synth{seed: uint64(night + 1), night: night, name: name, n: 300}), RecordOptions{}))
	}
	all, err := s.List(ctx, Query{})
	if err != nil {
		t.Fatal(err)
	}
	if got := runIDs(all); !slices.Equal(got, reversed(ids)) {
		t.Errorf("List(all) = %v, want newest first %v", got, reversed(ids))
	}
	for _, r := range all {
		if r.Phases != nil || r.Labels != nil || r.Report != nil {
			t.Errorf("run %d: parts read without Detail", r.ID)
		}
	}
	for _, c := range []struct {
		name string
		q    Query
		want []int64
	}{
		{"experiment", Query{Experiment: "alpha"}, []int64{ids[4], ids[3], ids[1], ids[0]}},
		{"since", Query{Since: night0.Add(3 * 24 * time.Hour)}, []int64{ids[5], ids[4], ids[3]}},
		{"since and experiment", Query{Experiment: "beta", Since: night0.Add(3 * 24 * time.Hour)}, []int64{ids[5]}},
		{"limit", Query{Limit: 2}, []int64{ids[5], ids[4]}},
		{"before", Query{Before: night0.Add(2 * 24 * time.Hour)}, []int64{ids[1], ids[0]}},
		{"since, before and limit", Query{Since: night0.Add(24 * time.Hour), Before: night0.Add(5 * 24 * time.Hour), Limit: 3}, []int64{ids[4], ids[3], ids[2]}},
		{"unknown experiment", Query{Experiment: "gamma"}, nil},
	} {
		got, err := s.List(ctx, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(runIDs(got), c.want) {
			t.Errorf("%s: List = %v, want %v", c.name, runIDs(got), c.want)
		}
	}
	detailed, err := s.List(ctx, Query{Limit: 1, Detail: WithSummary})
	if err != nil {
		t.Fatal(err)
	}
	if r := detailed[0]; len(r.Phases) == 0 || len(r.Thresholds) == 0 || len(r.Recovery) == 0 || r.Histograms != nil {
		t.Errorf("WithSummary read %d phases, %d thresholds, %d recovery, %d histograms; want all but histograms",
			len(r.Phases), len(r.Thresholds), len(r.Recovery), len(r.Histograms))
	}
}

func testComparable(t *testing.T, loc string) {
	s := open(t, loc)
	ctx := t.Context()
	base := insert(t, s, synthRun(t, synth{seed: 1, night: 0, n: 300}), RecordOptions{})
	same := insert(t, s, synthRun(t, synth{seed: 2, night: 1, n: 300}), RecordOptions{})
	insert(t, s, synthRun(t, synth{seed: 3, night: 2, n: 300, rate: 80}), RecordOptions{})    // another spec
	insert(t, s, synthRun(t, synth{seed: 4, night: 3, n: 300, replicas: 4}), RecordOptions{}) // another target
	insert(t, s, synthRun(t, synth{seed: 5, night: 4, n: 300, aborted: true}), RecordOptions{})
	later := insert(t, s, synthRun(t, synth{seed: 6, night: 5, n: 300}), RecordOptions{})
	cur, err := FromDocument(synthRun(t, synth{seed: 7, night: 5, n: 300}), RecordOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := Query{SpecHash: cur.SpecHash, Target: cur.Target, ExcludeAborted: true}
	got, err := s.List(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{later, same, base}; !slices.Equal(runIDs(got), want) {
		t.Errorf("comparable runs = %v, want %v (same spec hash and target, not aborted)", runIDs(got), want)
	}
	q.ExcludeID, q.Before, q.Limit = same, night0.Add(5*24*time.Hour), 5
	got, err = s.List(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{base}; !slices.Equal(runIDs(got), want) {
		t.Errorf("comparable before night 5 without run %d = %v, want %v", same, runIDs(got), want)
	}
}

func testNotFound(t *testing.T, loc string) {
	s := open(t, loc)
	_, err := s.Get(t.Context(), 4242, WithAll)
	if !errors.Is(err, ErrNotFound) || !IsNotFound(err) {
		t.Fatalf("Get(4242) = %v, want ErrNotFound", err)
	}
}

// diffFields lists the fields of two runs that differ, with both values
// in JSON.
func diffFields(got, want Run) []string {
	var out []string
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range g.NumField() {
		if reflect.DeepEqual(g.Field(i).Interface(), w.Field(i).Interface()) {
			continue
		}
		gj, _ := json.Marshal(g.Field(i).Interface())
		wj, _ := json.Marshal(w.Field(i).Interface())
		if len(gj) > 400 {
			gj, wj = gj[:400], wj[:min(400, len(wj))]
		}
		out = append(out, fmt.Sprintf("%s = %s, want %s", g.Type().Field(i).Name, gj, wj))
	}
	return out
}

func runIDs(runs []Run) []int64 {
	var out []int64
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

func reversed(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

// TestSpecHashIgnoresWhatDiffersBetweenSamples: the seed, run directory,
// endpoints and target do not change the hash; the workload does; the
// target is its own column.
func TestSpecHashIgnoresWhatDiffersBetweenSamples(t *testing.T) {
	a := synthRun(t, synth{seed: 1, night: 0, n: 60})
	b := synthRun(t, synth{seed: 2, night: 1, n: 60})
	c := synthRun(t, synth{seed: 1, night: 0, n: 60, rate: 80})
	d := synthRun(t, synth{seed: 1, night: 0, n: 60, replicas: 3})
	if SpecHash(a) != SpecHash(b) {
		t.Errorf("two samples of one experiment: hashes %s and %s differ", SpecHash(a), SpecHash(b))
	}
	if SpecHash(a) == SpecHash(c) {
		t.Errorf("another rate: same hash %s", SpecHash(a))
	}
	if SpecHash(a) != SpecHash(d) || Target(a) == Target(d) {
		t.Errorf("another simulator: hash %s vs %s (want equal), target %q vs %q (want different)", SpecHash(a), SpecHash(d), Target(a), Target(d))
	}
	if got, want := Target(a), `sim {"replicas":2,"startup_time":"2s"}`; got != want {
		t.Errorf("Target = %q, want %q", got, want)
	}
	load := &report.Document{Config: map[string]any{"targets": []any{"http://user:secret@10.0.0.1:8000/v1"}, "model": "m", "rate": "5"}}
	if got, want := Target(load), "http://user:xxxxx@10.0.0.1:8000/v1 model=m"; got != want {
		t.Errorf("load Target = %q, want %q", got, want)
	}
}

// TestSQLiteConcurrentWriters: two stores open on one file (as two
// llmchaos processes would be) record at once without losing a run.
func TestSQLiteConcurrentWriters(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "history.db")
	a, b := open(t, loc), open(t, loc)
	docs := []*report.Document{synthRun(t, synth{seed: 1, n: 200}), synthRun(t, synth{seed: 2, n: 200})}
	errc := make(chan error, 8)
	for i := range 8 {
		s := a
		if i%2 == 1 {
			s = b
		}
		go func() {
			_, err := Record(context.Background(), s, docs[i%2], RecordOptions{})
			errc <- err
		}()
	}
	for range 8 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	runs, err := a.List(t.Context(), Query{})
	if err != nil || len(runs) != 8 {
		t.Fatalf("after 8 concurrent records: %d runs, %v", len(runs), err)
	}
}

// TestPostgresURLWithoutSSLMode: a URL that names no sslmode reaches a
// server without TLS (libpq's default, prefer: TLS only when offered),
// while sslmode=require refuses it, saying why; an sslmode in the URL or
// in PGSSLMODE is left as it is.
func TestPostgresURLWithoutSSLMode(t *testing.T) {
	srv := pgtest.Start(t)
	loc := srv.NewDatabase(t)
	bare := strings.TrimSuffix(loc, "?sslmode=disable")
	if bare == loc {
		t.Fatalf("test database URL %s: want one ending in ?sslmode=disable", loc)
	}
	s := open(t, bare)
	if _, err := Record(t.Context(), s, synthRun(t, synth{seed: 1, n: 20}), RecordOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), bare+"?sslmode=require")
	if err == nil || !strings.Contains(err.Error(), "SSL") {
		t.Errorf("sslmode=require against a server without TLS = %v, want an SSL error", err)
	}
	for _, tt := range []struct{ location, env, want string }{
		{"postgres://u@h/db", "", "postgres://u@h/db?sslmode=prefer"},
		{"postgres://u@h/db?connect_timeout=5", "", "postgres://u@h/db?connect_timeout=5&sslmode=prefer"},
		{"postgres://u@h/db?sslmode=verify-full", "", "postgres://u@h/db?sslmode=verify-full"},
		{"postgres://u@h/db", "disable", "postgres://u@h/db"},
	} {
		u, err := url.Parse(tt.location)
		if err != nil {
			t.Fatal(err)
		}
		if got := withSSLModeDefault(tt.location, u, tt.env); got != tt.want {
			t.Errorf("withSSLModeDefault(%s, PGSSLMODE=%q) = %s, want %s", tt.location, tt.env, got, tt.want)
		}
	}
}
