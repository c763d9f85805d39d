// Package history is the memory of llmchaos: a store of every recorded run
// (an experiment's or a load's) and what is read back from it — listings,
// trends over nights and regression alarms against the run's own past.
//
// A Store keeps, per run: the experiment's name and a hash of its spec
// (SpecHash), the target, labels (--label k=v, the tool's version, a git
// commit), start time, verdict and exit code, every threshold's value and
// outcome, per-phase percentiles (TTFT, E2E, ITL, TPOT p50/p90/p99) and error
// rates, recovery times, requests lost, the resilience score when the run
// has one, the latency HDR histograms per phase (encoded as run.json
// encodes them) and the whole run.json, gzip-compressed. Two implementations share one
// SQL layer: an embedded SQLite file (pure Go, modernc.org/sqlite, so the
// static binary needs no cgo; .llmchaos/history.db by default) and
// PostgreSQL (github.com/lib/pq) for a team sharing one history. Open
// picks one from a path or URL. The schema is versioned: each migration is
// one numbered SQL file per dialect (migrations/) or a numbered Go step for
// both (goMigrations: a change of data, such as migration 2, which clears
// the score 0 that runs their reports leave unscored were once stored
// with), applied once, in order, under a lock, and recorded in
// llmchaos_schema_migrations.
//
// Record turns a report.Document into a Run and inserts it; Check compares
// a run with the median of its last comparable runs (same spec hash and
// target) and reports regressions, with the decision in the pure function
// Decide; BuildTrend turns a history into the data of the trend page that
// report.WriteTrendHTML draws.
//
// Writing history never changes a run's verdict: the CLI turns a failure to
// open or write the store into a warning on stderr.
package history
