package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestReconnectsAndConnectReported: the requests a client sent again after
// an endpoint closed a reused keep-alive connection are counted per
// endpoint in run.json (and survive reading it back), shown in the
// terminal summary apart from errors, and connection set-up times are the
// connect_ms metric.
func TestReconnectsAndConnectReported(t *testing.T) {
	rec := recording.NewRecorder(recording.Options{})
	eps := []string{"http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"}
	for i := range 6 {
		sent := time.Duration(i+1) * 100 * time.Millisecond
		res := &recording.Result{
			Seq: uint64(i), Tags: recording.Tags{Endpoint: eps[i%2]}, Scheduled: sent, Dequeued: sent, Sent: sent,
			FirstToken: sent + 50*time.Millisecond, End: sent + 80*time.Millisecond,
			Outcome: recording.OutcomeOK, ContentChunks: 2, Connect: 2 * time.Millisecond,
		}
		if i < 3 { // endpoint 1: requests 0 and 2; endpoint 2: request 1
			res.Reconnects = 1
		}
		rec.RequestStarted(sent)
		rec.RequestEnded(res.End)
		rec.Record(res)
	}
	d, err := Build(Meta{}, rec.Finish(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if d.Requests.Reconnects != 3 || d.Requests.Failed != 0 {
		t.Errorf("requests.reconnects %d, failed %d, want 3 and 0", d.Requests.Reconnects, d.Requests.Failed)
	}
	if c := d.Metrics["connect_ms"]; c.Count != 6 || c.Max < 1.9 || c.Max > 2.1 {
		t.Errorf("connect_ms %+v, want 6 samples of 2 ms", c)
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(d); err != nil {
		t.Fatal(err)
	}
	back, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{2, 1} {
		if got := back.run.Counts(recording.TagFilter{Endpoint: eps[i]}).Reconnects; got != want {
			t.Errorf("read back: endpoint %s: %d reconnects, want %d", eps[i], got, want)
		}
	}
	var text strings.Builder
	if err := WriteText(&text, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"reconnects", "(not errors)", "reconnects by endpoint: " + eps[0] + " 2, " + eps[1] + " 1", "connect"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, text.String())
		}
	}
}
