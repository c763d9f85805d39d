package faults

import (
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkJournalFault writes the four records of one fault (intent, a
// revert spec, injected, reverted), each fsynced, and reports the time per
// record: the price the runner pays before and after every injection.
func BenchmarkJournalFault(b *testing.B) {
	j, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	spec := RevertSpec{Kind: KindProcess, Data: json.RawMessage(`{"pid":1,"start_time":2}`)}
	const faultsPerOp = 25
	start := time.Now()
	for b.Loop() {
		for range faultsPerOp {
			e, err := j.Begin("f", "t", "target")
			if err != nil {
				b.Fatal(err)
			}
			if err := e.Will(spec); err != nil {
				b.Fatal(err)
			}
			if err := e.Injected(); err != nil {
				b.Fatal(err)
			}
			if err := e.Reverted(nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	records := float64(b.N * faultsPerOp * 4)
	b.ReportMetric(float64(time.Since(start).Microseconds())/records, "us/record")
}
