package recording

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestReadRequestsRoundTrip: what RequestWriter writes, ReadRequests reads
// back field for field (times to the microsecond), skipping other lines
// when lenient and naming them otherwise.
func TestReadRequestsRoundTrip(t *testing.T) {
	t.Parallel()
	want := []*Result{
		{Seq: 3, RequestID: "r-3", Session: 7, Turn: 1, Tags: Tags{Phase: "fault", Fault: "kill", Class: "chat", Endpoint: "http://a/v1", Scenario: "s"},
			Scheduled: 10 * time.Millisecond, Dequeued: 11 * time.Millisecond, Sent: 12 * time.Millisecond, FirstToken: 40 * time.Millisecond, End: 90 * time.Millisecond,
			Connect: time.Millisecond, Reconnects: 1, ITLMicros: []uint32{100, 2000}, Outcome: OutcomeOK, HTTPStatus: 200,
			InputTokens: 16, OutputTokens: 4, ContentChunks: 3, UsageReported: true, PromptTokensSent: 15, FinishReason: "length", OutputChars: 20, NgramsTotal: 5, NgramsRepeated: 1},
		{Seq: 4, Scheduled: 20 * time.Millisecond, Dequeued: 20 * time.Millisecond, Sent: 21 * time.Millisecond, End: 30 * time.Millisecond,
			Outcome: OutcomeFailed, Class: ClassConnect, Err: "connection refused \"x\"", ITLMicros: []uint32{}},
		{Seq: 5, Scheduled: 25 * time.Millisecond, End: 25 * time.Millisecond, Outcome: OutcomeDropped, ITLMicros: []uint32{}},
	}
	var buf bytes.Buffer
	buf.WriteString("llmchaos load: a human line\n")
	w := NewRequestWriter(&buf)
	for _, r := range want {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("{\n  \"report\": 1\n}\n")
	var got []*Result
	if err := ReadRequests(bytes.NewReader(buf.Bytes()), true, func(r *Result) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d results, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("result %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	err := ReadRequests(bytes.NewReader(buf.Bytes()), false, func(*Result) {})
	if err == nil || !strings.Contains(err.Error(), "request line 1") {
		t.Errorf("strict read of a log with other lines: %v", err)
	}
}
