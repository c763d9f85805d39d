-- The first schema: one row per run, its parts in child tables.
-- Times are unix microseconds (UTC); booleans 0/1.
CREATE TABLE llmchaos_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  experiment TEXT NOT NULL,
  kind TEXT NOT NULL,
  spec_hash TEXT NOT NULL,
  target TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  recorded_at INTEGER NOT NULL,
  duration_s REAL NOT NULL,
  verdict TEXT NOT NULL,
  exit_code INTEGER NOT NULL,
  abort TEXT NOT NULL DEFAULT '',
  tool_version TEXT NOT NULL DEFAULT '',
  seed INTEGER NOT NULL DEFAULT 0,
  requests_sent INTEGER NOT NULL DEFAULT 0,
  requests_ok INTEGER NOT NULL DEFAULT 0,
  requests_failed INTEGER NOT NULL DEFAULT 0,
  requests_lost INTEGER NOT NULL DEFAULT 0,
  error_rate REAL NOT NULL DEFAULT 0,
  score REAL,
  regressed INTEGER,
  report BLOB NOT NULL
);
CREATE INDEX llmchaos_runs_experiment ON llmchaos_runs (experiment, started_at);
CREATE INDEX llmchaos_runs_comparable ON llmchaos_runs (spec_hash, target, started_at);
CREATE INDEX llmchaos_runs_started ON llmchaos_runs (started_at);
CREATE TABLE llmchaos_run_labels (
  run_id INTEGER NOT NULL REFERENCES llmchaos_runs (id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
CREATE TABLE llmchaos_run_thresholds (
  run_id INTEGER NOT NULL REFERENCES llmchaos_runs (id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  metric TEXT NOT NULL,
  tags TEXT NOT NULL,
  expr TEXT NOT NULL,
  value REAL,
  ok INTEGER NOT NULL,
  no_data INTEGER NOT NULL,
  PRIMARY KEY (run_id, idx)
);
CREATE TABLE llmchaos_run_phases (
  run_id INTEGER NOT NULL REFERENCES llmchaos_runs (id) ON DELETE CASCADE,
  phase TEXT NOT NULL,
  fault TEXT NOT NULL,
  requests INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  error_rate REAL NOT NULL,
  ttft_count INTEGER NOT NULL, ttft_p50 REAL NOT NULL, ttft_p90 REAL NOT NULL, ttft_p99 REAL NOT NULL,
  e2e_count INTEGER NOT NULL, e2e_p50 REAL NOT NULL, e2e_p90 REAL NOT NULL, e2e_p99 REAL NOT NULL,
  itl_count INTEGER NOT NULL, itl_p50 REAL NOT NULL, itl_p90 REAL NOT NULL, itl_p99 REAL NOT NULL,
  tpot_count INTEGER NOT NULL, tpot_p50 REAL NOT NULL, tpot_p90 REAL NOT NULL, tpot_p99 REAL NOT NULL,
  PRIMARY KEY (run_id, phase, fault)
);
CREATE TABLE llmchaos_run_recovery (
  run_id INTEGER NOT NULL REFERENCES llmchaos_runs (id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  fault TEXT NOT NULL,
  recovered INTEGER NOT NULL,
  recovery_time_s REAL,
  time_to_recover_s REAL,
  insufficient_traffic INTEGER NOT NULL,
  PRIMARY KEY (run_id, idx)
);
CREATE TABLE llmchaos_run_histograms (
  run_id INTEGER NOT NULL REFERENCES llmchaos_runs (id) ON DELETE CASCADE,
  phase TEXT NOT NULL,
  fault TEXT NOT NULL,
  metric TEXT NOT NULL,
  hdr TEXT NOT NULL,
  PRIMARY KEY (run_id, phase, fault, metric)
);
