package history

import (
	"context"
	"encoding/json"
	"fmt"
)

// clearUnscoredZeros is migration 2 (both dialects): before it, scoreOf read
// a report's null score (a run a signal or an error cut short: "score":
// {"value": null}) as 0, so such runs were stored with score 0 and pulled
// trends and regression baselines down. It reads the report of every run
// stored with score 0 and sets the score to NULL where the report names a
// score and scoreOf finds none in it. A 0 the report gives (a failed
// revert zeroes a score) stays; so does a 0 whose report names no score at
// all (the recorder's caller gave it, RecordOptions.Score), and one whose
// report does not decompress (nothing says it is wrong).
func clearUnscoredZeros(ctx context.Context, q execer, d dialect) error {
	rows, err := q.QueryContext(ctx, `SELECT id, report FROM llmchaos_runs WHERE score = 0 ORDER BY id`)
	if err != nil {
		return fmt.Errorf("read the runs scored 0: %w", err)
	}
	// The ids first, then the updates: one connection cannot run a
	// statement while it still streams a result.
	var ids []int64
	for rows.Next() {
		var id int64
		var blob []byte
		if err := rows.Scan(&id, &blob); err != nil {
			rows.Close()
			return fmt.Errorf("read the runs scored 0: %w", err)
		}
		b, err := decompress(blob)
		if err == nil && unscoredReport(b) {
			ids = append(ids, id)
		}
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return fmt.Errorf("read the runs scored 0: %w", err)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read the runs scored 0: %w", err)
	}
	for _, id := range ids {
		if _, err := q.ExecContext(ctx, d.rebind(`UPDATE llmchaos_runs SET score = NULL WHERE id = ? AND score = 0`), id); err != nil {
			return fmt.Errorf("clear the score of run %d: %w", id, err)
		}
	}
	return nil
}

// unscoredReport reports whether a report's JSON names a score (a
// top-level "resilience_score" or "score", as scoreOf reads them) that
// scoreOf reads as none: the report leaves its run unscored.
func unscoredReport(report []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(report, &top) != nil {
		return false
	}
	_, named := top["resilience_score"]
	if _, ok := top["score"]; ok {
		named = true
	}
	return named && scoreOf(report) == nil
}
