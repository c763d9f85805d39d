package history

import (
	"testing"

	"github.com/llmchaos/llmchaos/report"
)

// TestRecordedScoreIsTheReports: a run is recorded with the resilience
// score its report holds; one the report leaves unscored (a run a signal
// cut short: score {"value": null, "unscored": "signal"}) is recorded
// without a score, never as 0, and a score of 0 the report gives (a revert
// that failed) stays 0.
func TestRecordedScoreIsTheReports(t *testing.T) {
	skipUnderRace(t)
	f64 := func(v float64) *float64 { return &v }
	tests := []struct {
		name  string
		score *report.Score
		want  *float64
	}{
		{"scored", &report.Score{Value: f64(72.5)}, f64(72.5)},
		{"zeroed by a failed revert", &report.Score{Value: f64(0), Zeroed: report.ScoreZeroRevertFailed}, f64(0)},
		{"unscored: a signal", &report.Score{Unscored: report.AbortSignal}, nil},
		{"unscored: no data", &report.Score{Unscored: "no_data"}, nil},
		{"no score at all", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := synthRun(t, synth{seed: 3, night: 1, aborted: tt.score != nil && tt.score.Unscored == report.AbortSignal})
			doc.Score = tt.score
			run, err := FromDocument(doc, RecordOptions{ExitCode: 98})
			if err != nil {
				t.Fatal(err)
			}
			switch got := run.Score; {
			case tt.want == nil && got != nil:
				t.Errorf("score %v, want none", *got)
			case tt.want != nil && (got == nil || *got != *tt.want):
				t.Errorf("score %v, want %v", got, *tt.want)
			}
		})
	}
}
