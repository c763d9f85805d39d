package history

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// sqlStore is the Store over database/sql, for every dialect.
type sqlStore struct {
	db    *sql.DB
	d     dialect
	where string // the location, for messages
}

var _ Store = (*sqlStore)(nil)

// Close closes the database.
func (s *sqlStore) Close() error { return s.db.Close() }

func (s *sqlStore) errorf(format string, args ...any) error {
	return fmt.Errorf("history %s: "+format, append([]any{s.where}, args...)...)
}

// runColumns are llmchaos_runs' columns but report, in scanRun's order.
const runColumns = `id, experiment, kind, spec_hash, target, started_at, recorded_at, duration_s, verdict, exit_code, abort,
tool_version, seed, requests_sent, requests_ok, requests_failed, requests_lost, error_rate, score, regressed`

// Insert records run in one transaction.
func (s *sqlStore) Insert(ctx context.Context, run *Run) (id int64, err error) {
	blob, err := compress(run.Report)
	if err != nil {
		return 0, s.errorf("compress the report: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, s.errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	recorded := run.RecordedAt
	if recorded.IsZero() {
		recorded = time.Now().UTC().Truncate(time.Microsecond)
	}
	var regressed any
	if run.Regressed != nil {
		regressed = *run.Regressed
	}
	var score any
	if run.Score != nil {
		score = *run.Score
	}
	err = tx.QueryRowContext(ctx, s.d.rebind(`INSERT INTO llmchaos_runs (experiment, kind, spec_hash, target, started_at, recorded_at,
duration_s, verdict, exit_code, abort, tool_version, seed, requests_sent, requests_ok, requests_failed, requests_lost, error_rate,
score, regressed, report) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		run.Experiment, run.Kind, run.SpecHash, run.Target, s.d.timeArg(run.StartedAt), s.d.timeArg(recorded),
		run.DurationS, run.Verdict, run.ExitCode, run.Abort, run.ToolVersion, run.Seed,
		run.Requests.Sent, run.Requests.OK, run.Requests.Failed, run.Requests.Lost, run.ErrorRate,
		score, regressed, blob).Scan(&id)
	if err != nil {
		return 0, s.errorf("insert run: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(run.Labels)) {
		if _, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO llmchaos_run_labels (run_id, key, value) VALUES (?, ?, ?)`),
			id, k, run.Labels[k]); err != nil {
			return 0, s.errorf("insert label %s: %w", k, err)
		}
	}
	for i, th := range run.Thresholds {
		tags, jerr := json.Marshal(th.Tags)
		if jerr != nil {
			return 0, s.errorf("threshold %s: %w", th.Key(), jerr)
		}
		if _, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO llmchaos_run_thresholds (run_id, idx, metric, tags, expr, value, ok, no_data)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), id, i, th.Metric, string(tags), th.Expr, nullFloat(th.Value), th.OK, th.NoData); err != nil {
			return 0, s.errorf("insert threshold %s: %w", th.Key(), err)
		}
	}
	for _, p := range run.Phases {
		args := []any{id, p.Phase, p.Fault, p.Requests, p.Failed, p.ErrorRate}
		for _, l := range []Percentiles{p.TTFT, p.E2E, p.ITL, p.TPOT} {
			args = append(args, l.Count, l.P50, l.P90, l.P99)
		}
		if _, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO llmchaos_run_phases (run_id, phase, fault, requests, failed, error_rate,
ttft_count, ttft_p50, ttft_p90, ttft_p99, e2e_count, e2e_p50, e2e_p90, e2e_p99,
itl_count, itl_p50, itl_p90, itl_p99, tpot_count, tpot_p50, tpot_p90, tpot_p99)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`), args...); err != nil {
			return 0, s.errorf("insert phase %q fault %q: %w", p.Phase, p.Fault, err)
		}
	}
	for i, r := range run.Recovery {
		if _, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO llmchaos_run_recovery (run_id, idx, fault, recovered, recovery_time_s,
time_to_recover_s, insufficient_traffic) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			id, i, r.Fault, r.Recovered, nullFloat(r.RecoveryTimeS), nullFloat(r.TimeToRecoverS), r.InsufficientTraffic); err != nil {
			return 0, s.errorf("insert recovery of %s: %w", r.Fault, err)
		}
	}
	for _, h := range run.Histograms {
		if _, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO llmchaos_run_histograms (run_id, phase, fault, metric, hdr) VALUES (?, ?, ?, ?, ?)`),
			id, h.Phase, h.Fault, h.Metric, h.HDR); err != nil {
			return 0, s.errorf("insert histogram %s of phase %q fault %q: %w", h.Metric, h.Phase, h.Fault, err)
		}
	}
	if err = tx.Commit(); err != nil {
		return 0, s.errorf("commit: %w", err)
	}
	return id, nil
}

// List returns the runs q selects, newest first.
func (s *sqlStore) List(ctx context.Context, q Query) ([]Run, error) {
	var where []string
	var args []any
	add := func(cond string, arg any) {
		where = append(where, cond)
		args = append(args, arg)
	}
	if q.Experiment != "" {
		add("experiment = ?", q.Experiment)
	}
	if q.SpecHash != "" {
		add("spec_hash = ?", q.SpecHash)
	}
	if q.Target != "" {
		add("target = ?", q.Target)
	}
	if !q.Since.IsZero() {
		add("started_at >= ?", s.d.timeArg(q.Since))
	}
	if !q.Before.IsZero() {
		add("started_at < ?", s.d.timeArg(q.Before))
	}
	if q.ExcludeID != 0 {
		add("id <> ?", q.ExcludeID)
	}
	if q.ExcludeAborted {
		add("verdict <> ?", "aborted")
	}
	query := `SELECT ` + runColumns + ` FROM llmchaos_runs`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY started_at DESC, id DESC"
	if q.Limit > 0 {
		query += " LIMIT ?"
		args = append(args, q.Limit)
	}
	runs, err := s.scanRuns(ctx, s.d.rebind(query), args...)
	if err != nil {
		return nil, err
	}
	if err := s.details(ctx, runs, q.Detail); err != nil {
		return nil, err
	}
	return runs, nil
}

// Get returns one run.
func (s *sqlStore) Get(ctx context.Context, id int64, detail Detail) (*Run, error) {
	runs, err := s.scanRuns(ctx, s.d.rebind(`SELECT `+runColumns+` FROM llmchaos_runs WHERE id = ?`), id)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	if err := s.details(ctx, runs, detail); err != nil {
		return nil, err
	}
	return &runs[0], nil
}

func (s *sqlStore) scanRuns(ctx context.Context, query string, args ...any) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var started, recorded dbTime
		var score sql.NullFloat64
		var regressed sql.NullBool
		if err := rows.Scan(&r.ID, &r.Experiment, &r.Kind, &r.SpecHash, &r.Target, &started, &recorded, &r.DurationS,
			&r.Verdict, &r.ExitCode, &r.Abort, &r.ToolVersion, &r.Seed,
			&r.Requests.Sent, &r.Requests.OK, &r.Requests.Failed, &r.Requests.Lost, &r.ErrorRate, &score, &regressed); err != nil {
			return nil, s.errorf("read run: %w", err)
		}
		r.StartedAt, r.RecordedAt = started.t, recorded.t
		if score.Valid {
			r.Score = &score.Float64
		}
		if regressed.Valid {
			r.Regressed = &regressed.Bool
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.errorf("list runs: %w", err)
	}
	return out, nil
}

// idChunk bounds the ids of one IN (…) list.
const idChunk = 400

// details reads the parts detail asks for into runs.
func (s *sqlStore) details(ctx context.Context, runs []Run, detail Detail) error {
	if len(runs) == 0 || detail == 0 {
		return nil
	}
	index := make(map[int64]*Run, len(runs))
	ids := make([]int64, len(runs))
	for i := range runs {
		index[runs[i].ID] = &runs[i]
		ids[i] = runs[i].ID
	}
	type part struct {
		flag  Detail
		query string
		scan  func(rows *sql.Rows) error
	}
	parts := []part{
		{WithLabels, `SELECT run_id, key, value FROM llmchaos_run_labels WHERE run_id IN (%s) ORDER BY run_id, key`,
			func(rows *sql.Rows) error {
				var id int64
				var k, v string
				if err := rows.Scan(&id, &k, &v); err != nil {
					return err
				}
				r := index[id]
				if r.Labels == nil {
					r.Labels = map[string]string{}
				}
				r.Labels[k] = v
				return nil
			}},
		{WithThresholds, `SELECT run_id, metric, tags, expr, value, ok, no_data FROM llmchaos_run_thresholds WHERE run_id IN (%s) ORDER BY run_id, idx`,
			func(rows *sql.Rows) error {
				var id int64
				var th Threshold
				var tags string
				var v sql.NullFloat64
				if err := rows.Scan(&id, &th.Metric, &tags, &th.Expr, &v, &th.OK, &th.NoData); err != nil {
					return err
				}
				if err := json.Unmarshal([]byte(tags), &th.Tags); err != nil {
					return fmt.Errorf("threshold tags %q: %w", tags, err)
				}
				th.Value = floatPtr(v)
				index[id].Thresholds = append(index[id].Thresholds, th)
				return nil
			}},
		{WithPhases, `SELECT run_id, phase, fault, requests, failed, error_rate,
ttft_count, ttft_p50, ttft_p90, ttft_p99, e2e_count, e2e_p50, e2e_p90, e2e_p99,
itl_count, itl_p50, itl_p90, itl_p99, tpot_count, tpot_p50, tpot_p90, tpot_p99
FROM llmchaos_run_phases WHERE run_id IN (%s) ORDER BY run_id, phase, fault`,
			func(rows *sql.Rows) error {
				var id int64
				var p PhaseStats
				dest := []any{&id, &p.Phase, &p.Fault, &p.Requests, &p.Failed, &p.ErrorRate}
				for _, l := range []*Percentiles{&p.TTFT, &p.E2E, &p.ITL, &p.TPOT} {
					dest = append(dest, &l.Count, &l.P50, &l.P90, &l.P99)
				}
				if err := rows.Scan(dest...); err != nil {
					return err
				}
				index[id].Phases = append(index[id].Phases, p)
				return nil
			}},
		{WithRecovery, `SELECT run_id, fault, recovered, recovery_time_s, time_to_recover_s, insufficient_traffic
FROM llmchaos_run_recovery WHERE run_id IN (%s) ORDER BY run_id, idx`,
			func(rows *sql.Rows) error {
				var id int64
				var r Recovery
				var rt, ttr sql.NullFloat64
				if err := rows.Scan(&id, &r.Fault, &r.Recovered, &rt, &ttr, &r.InsufficientTraffic); err != nil {
					return err
				}
				r.RecoveryTimeS, r.TimeToRecoverS = floatPtr(rt), floatPtr(ttr)
				index[id].Recovery = append(index[id].Recovery, r)
				return nil
			}},
		{WithHistograms, `SELECT run_id, phase, fault, metric, hdr FROM llmchaos_run_histograms WHERE run_id IN (%s) ORDER BY run_id, phase, fault, metric`,
			func(rows *sql.Rows) error {
				var id int64
				var h Histogram
				if err := rows.Scan(&id, &h.Phase, &h.Fault, &h.Metric, &h.HDR); err != nil {
					return err
				}
				index[id].Histograms = append(index[id].Histograms, h)
				return nil
			}},
		{WithReport, `SELECT id, report FROM llmchaos_runs WHERE id IN (%s)`,
			func(rows *sql.Rows) error {
				var id int64
				var blob []byte
				if err := rows.Scan(&id, &blob); err != nil {
					return err
				}
				b, err := decompress(blob)
				if err != nil {
					return fmt.Errorf("run %d's report: %w", id, err)
				}
				index[id].Report = b
				return nil
			}},
	}
	defer func() {
		for i := range runs {
			sortParts(runs[i].Phases, runs[i].Histograms)
		}
	}()
	for _, p := range parts {
		if detail&p.flag == 0 {
			continue
		}
		for chunk := range slices.Chunk(ids, idChunk) {
			marks := strings.TrimSuffix(strings.Repeat("?, ", len(chunk)), ", ")
			args := make([]any, len(chunk))
			for i, id := range chunk {
				args[i] = id
			}
			if err := s.each(ctx, s.d.rebind(fmt.Sprintf(p.query, marks)), args, p.scan); err != nil {
				return err
			}
		}
	}
	return nil
}

// each runs query and calls scan for each row.
func (s *sqlStore) each(ctx context.Context, query string, args []any, scan func(*sql.Rows) error) error {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return s.errorf("read: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return s.errorf("read: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return s.errorf("read: %w", err)
	}
	return nil
}

func nullFloat(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

func floatPtr(v sql.NullFloat64) *float64 {
	if !v.Valid {
		return nil
	}
	f := v.Float64
	return &f
}

// compress gzips b.
func compress(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decompress reverses compress; an empty blob is an empty report.
func decompress(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	return out, errors.Join(zr.Close())
}
