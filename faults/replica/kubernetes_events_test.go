package replica

import (
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/cache"
)

// TestKubernetesEventPlacedWhenSeen: a Kubernetes Event is placed when the
// watch sees it, never at its API time (which has one-second resolution
// and so may read before its cause); the API time is kept as SourceTime,
// and the Event's uid and count name the occurrence, so that two watches
// of one pod report it once.
func TestKubernetesEventPlacedWhenSeen(t *testing.T) {
	t.Parallel()
	var got []Event
	w := &podWatch{emit: func(e Event) { got = append(got, e) }, pods: map[string]podState{}, owners: map[string]bool{}, uids: map[string]bool{"pod-uid": true}}
	h := w.eventHandler().(cache.ResourceEventHandlerDetailedFuncs)
	api := time.Now().Truncate(time.Second) // what the API says: the second it happened in
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{UID: "event-uid"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "sim-0", UID: "pod-uid"},
		Reason:         "Killing", Message: "Stopping container sim", Count: 1,
		LastTimestamp: metav1.NewTime(api),
	}
	before := time.Now()
	h.AddFunc(ev, false)
	if len(got) != 1 {
		t.Fatalf("events %v, want one", got)
	}
	e := got[0]
	if e.At.Before(before) || !e.SourceTime.Equal(api) {
		t.Errorf("event at %v (seen from %v), source time %v; want it placed when seen, the API's %v kept", e.At, before, e.SourceTime, api)
	}
	if e.Kind != "Killing" || e.Replica != "sim-0" || e.Object != "pod pod-uid" || e.Occurrence != "event event-uid #1" {
		t.Errorf("event %+v, want Killing of sim-0 named by the pod's uid and the Event's uid and count", e)
	}
	var d Deduper
	again := e
	again.At = e.At.Add(300 * time.Millisecond) // a second watch, a little later
	if !d.First(e) || d.First(again) {
		t.Error("two watches' reports of one Event were not one")
	}
}
