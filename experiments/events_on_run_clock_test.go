package experiments

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestKubernetesEventOnTheRunClock: a Kubernetes Event lands on the run
// clock when it was seen, not at the API's time (whole seconds, so earlier
// than the kill that caused it), which run.json keeps beside it as
// source_time and the HTML report shows; a second watch's report of the
// same Event is not recorded again.
func TestKubernetesEventOnTheRunClock(t *testing.T) {
	t.Parallel()
	start := time.Now()
	clock := &runClock{}
	clock.Store(recording.NewRunClockAt(start))
	var out bytes.Buffer
	obs := newObservers(&lineWriter{w: &out}, ObserveOptions{}, clock)

	kill := start.Add(2200 * time.Millisecond)
	seen := kill.Add(100 * time.Millisecond) // the watch saw the kill's Event 0.1 s later
	api := kill.Truncate(time.Second)        // the API's one-second time: up to a second before the kill
	ev := replica.Event{At: seen, SourceTime: api, Replica: "sim-0", Kind: "Killing", Detail: "Stopping container sim",
		Object: "pod pod-uid", Occurrence: "event event-uid #1"}
	obs.kubernetesEvent(ev)
	again := ev
	again.At = seen.Add(400 * time.Millisecond) // another fault's watch of the same pod
	obs.kubernetesEvent(again)

	evs := obs.eventLog()
	if len(evs) != 1 {
		t.Fatalf("events %+v, want one: two watches' reports of one Event", evs)
	}
	e := evs[0]
	if e.Source != report.EventSourceKubernetes || e.Kind != "Killing" || e.Target != "sim-0" {
		t.Errorf("event %+v, want Killing of sim-0 from kubernetes", e)
	}
	if want := seen.Sub(start).Seconds(); e.AtS != want {
		t.Errorf("event at %.3fs, want %.3fs, when it was seen", e.AtS, want)
	}
	if got, err := time.Parse(time.RFC3339Nano, e.SourceTime); err != nil || !got.Equal(api) {
		t.Errorf("source_time %q (%v), want the API's %v", e.SourceTime, err, api.UTC())
	}
	if !strings.Contains(out.String(), "kubernetes sim-0 Killing") {
		t.Errorf("no progress line for the event:\n%s", out.String())
	}
	var page bytes.Buffer
	if err := report.WriteHTML(&page, &report.Document{Experiment: &report.Experiment{Name: "k"}, Events: evs}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "its source&#39;s time: "+e.SourceTime) && !strings.Contains(page.String(), "its source's time: "+e.SourceTime) {
		t.Errorf("HTML report does not show the event's source time %s", e.SourceTime)
	}
}
