package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestUsageDifferenceIsInformation: a stream that counted one chunk fewer
// than usage.completion_tokens (llama-server merging a split multi-byte
// character into one chunk) is a note in the text report, not a usage
// mismatch; a difference beyond max(2, 5 %) still is one. The counts
// survive a round trip through run.json.
func TestUsageDifferenceIsInformation(t *testing.T) {
	r := recording.NewRecorder(recording.Options{})
	for i, chunks := range []int{100, 99, 100, 101, 80} { // usage 100 each
		sent := time.Duration(i+1) * 100 * time.Millisecond
		r.RequestStarted(sent)
		res := &recording.Result{Seq: uint64(i), Scheduled: sent, Dequeued: sent, Sent: sent,
			FirstToken: sent + 10*time.Millisecond, End: sent + 500*time.Millisecond,
			Outcome: recording.OutcomeOK, HTTPStatus: 200, OutputTokens: 100, ContentChunks: chunks, UsageReported: true,
			FinishReason: "stop", OutputChars: 400}
		r.RequestEnded(res.End)
		r.Record(res)
	}
	d, err := Build(testMeta(), r.Finish(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Quality.UsageMismatchRate, 1.0/5; got != want {
		t.Errorf("usage mismatch rate %v, want %v (only 80 chunks for 100 tokens)", got, want)
	}
	var js bytes.Buffer
	if err := Write(&js, d); err != nil {
		t.Fatal(err)
	}
	back, err := Decode(&js)
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]*Document{"built": d, "read back": back} {
		var b bytes.Buffer
		if err := WriteText(&b, doc); err != nil {
			t.Fatal(err)
		}
		out := squeeze(b.String())
		for _, want := range []string{"usage mismatch rate 20.00%", "note: 2 of 5 requests with usage streamed a few chunks more or fewer"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: text lacks %q:\n%s", name, want, b.String())
			}
		}
	}
}

func TestUsageMismatchTolerance(t *testing.T) {
	tests := []struct {
		usage, chunks int
		want          bool
	}{
		{100, 100, false},
		{100, 99, false}, // llama-server: one chunk for two tokens
		{100, 95, false}, // 5 % exactly
		{100, 94, true},
		{10, 8, false}, // 2 tokens exactly
		{10, 7, true},
		{1000, 951, false},
		{1000, 949, true},
		{3, 6, true},
		{0, 3, true},
	}
	for _, tt := range tests {
		if got := recording.UsageMismatch(tt.usage, tt.chunks); got != tt.want {
			t.Errorf("UsageMismatch(%d, %d) = %v, want %v", tt.usage, tt.chunks, got, tt.want)
		}
	}
}
