package shardjob_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
)

// TestParseReportFindsTheReportAmongOtherLines: the report is found
// between the lines load writes to stderr; a log without one says so and
// quotes its end (why the shard failed).
func TestParseReportFindsTheReportAmongOtherLines(t *testing.T) {
	log := "llmchaos load: 30 requests at 30/s; shard 1/3\n" +
		"{\n  \"schema_version\": 1,\n  \"name\": \"first\",\n  \"duration_s\": 1\n}\n" +
		"  ttft p99 12ms\n" +
		"{\n  \"schema_version\": 1,\n  \"name\": \"shard\",\n  \"duration_s\": 2.5\n}\n" +
		"verdict: PASS\n"
	doc, err := shardjob.ParseReport([]byte(log))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Name != "shard" || doc.DurationS != 2.5 {
		t.Errorf("report %q %v, want the last one", doc.Name, doc.DurationS)
	}
	bad := "llmchaos load: --start-at: 2026-01-01T00:00:00Z is 3s in the past\n{\n  \"schema_version\": 0\n}\n"
	_, err = shardjob.ParseReport([]byte(bad))
	if !errors.Is(err, shardjob.ErrNoReport) || !strings.Contains(err.Error(), "is 3s in the past") {
		t.Errorf("ParseReport: %v", err)
	}
	if _, err := shardjob.ParseReport(nil); !errors.Is(err, shardjob.ErrNoReport) {
		t.Errorf("empty log: %v", err)
	}
}
