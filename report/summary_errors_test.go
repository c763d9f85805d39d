package report

import (
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

func TestSaturation(t *testing.T) {
	tests := []struct {
		name string
		r    Requests
		lag  Stats
		want string // substring; "" for none
	}{
		{"kept up", Requests{Scheduled: 100, Sent: 100}, Stats{Count: 100, P50: 0.2, P99: 3}, ""},
		{"drops are the cap at work", Requests{Scheduled: 100, Sent: 60, Dropped: 40}, Stats{Count: 60, P50: 0.2, P99: 3}, ""},
		{"too few sent", Requests{Scheduled: 100, Sent: 90}, Stats{Count: 90, P50: 0.2, P99: 3}, "sent 90 of 100"},
		{"median lag", Requests{Scheduled: 100, Sent: 100}, Stats{Count: 100, P50: 5900, P99: 9000}, "send lag p50 5.90s"},
		{"tail lag", Requests{Scheduled: 100, Sent: 100}, Stats{Count: 100, P50: 1, P99: 250}, "send lag p99 250.0ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Saturation(tt.r, tt.lag)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTopErrorsAndSaturationInSummary: the most frequent message of each
// error class reaches run.json and the summary, cut to MaxErrorMessage
// characters; a client that fell behind is said so in both.
func TestTopErrorsAndSaturationInSummary(t *testing.T) {
	rec := recording.NewRecorder(recording.Options{})
	long := "http 404: The model `wrong` does not exist. " + strings.Repeat("x", 200)
	for i := range 10 {
		res := &recording.Result{Seq: uint64(i), Scheduled: time.Duration(i) * time.Millisecond, Outcome: recording.OutcomeFailed, Class: recording.ClassHTTP4xx, HTTPStatus: 404, Err: long}
		if i == 0 {
			res.Err = "http 404: rare"
		}
		res.Sent = res.Scheduled + 2*time.Second // far behind the schedule
		res.End = res.Sent + time.Millisecond
		rec.RequestStarted(res.Sent)
		rec.Record(res)
		rec.RequestEnded(res.End)
	}
	d, err := Build(testMeta(), rec.Finish(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	top, ok := d.Requests.TopErrors["http_4xx"]
	if !ok || top.Count != 9 || !strings.HasPrefix(top.Message, "http 404: The model `wrong` does not exist.") || len([]rune(top.Message)) != MaxErrorMessage {
		t.Fatalf("top_errors = %+v, want the 9 of the long message cut to %d characters", d.Requests.TopErrors, MaxErrorMessage)
	}
	if !d.ClientSaturated || !strings.Contains(d.ClientSaturatedReason, "send lag p50") {
		t.Errorf("client_saturated %v %q, want true for a 2 s send lag", d.ClientSaturated, d.ClientSaturatedReason)
	}
	var b strings.Builder
	if err := WriteText(&b, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"http_4xx, most often (9): http 404: The model `wrong` does not exist.", "client saturated: send lag p50", "totals: 10 requests (0 ok)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	// Every line fits the 120 columns of llmchaos's terminal output, the
	// longest error message and the saturation note included.
	for i, line := range strings.Split(b.String(), "\n") {
		if n := len([]rune(line)); n > 120 {
			t.Errorf("summary line %d is %d columns wide (over 120): %q", i+1, n, line)
		}
	}
}
