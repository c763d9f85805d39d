package llm_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// A Route picks each request's URL and endpoint tag at its send: requests
// go where it says and carry its tag; while it has no endpoint, they fail
// at once, class connect, without being sent; every request is accounted.
func TestE2ERouteChangesEndpointsWhileTheLoadRuns(t *testing.T) {
	a, _ := startSim(t, simOpts{TTFT: 2 * time.Millisecond, ITL: time.Millisecond})
	b, _ := startSim(t, simOpts{TTFT: 2 * time.Millisecond, ITL: time.Millisecond})
	var n atomic.Int64
	none := errors.New("no ready endpoint")
	route := func(int) (string, string, error) {
		switch i := n.Add(1) - 1; {
		case i < 10:
			return a, "pod-a", nil
		case i < 20:
			return "", "", none
		default:
			return b, "pod-b", nil
		}
	}
	r := e2e{targets: []string{"http://service.invalid/v1"}, arrival: workload.ArrivalConfig{Rate: 200, Arrival: workload.ArrivalConstant, Requests: 30},
		workload: shortChat(2), grace: 5 * time.Second, route: route}.run(t)
	req := checkAccounting(t, r)
	if req.OK != 20 || req.Failed != 10 {
		t.Fatalf("ok %d failed %d, want 20 and 10 (errors %v)", req.OK, req.Failed, req.ErrorsByClass)
	}
	counts := map[string]int{}
	for _, s := range r.results {
		counts[s.Endpoint+" "+s.Outcome+" "+s.ErrorClass]++
		if s.Outcome == "failed" && s.SentUs != s.EndUs {
			t.Errorf("seq %d failed for want of an endpoint after %dus, want at once", s.Seq, s.EndUs-s.SentUs)
		}
	}
	want := map[string]int{"pod-a ok ": 10, "http://service.invalid/v1 failed connect": 10, "pod-b ok ": 10}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("results %q: %d, want %d (all: %v)", k, counts[k], v, counts)
		}
	}
	if got := r.sum.Counts(recording.TagFilter{Endpoint: "pod-b"}).OK; got != 10 {
		t.Errorf("recorder's pod-b count %d, want 10", got)
	}
}
