package llm_test

import (
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// A clean simulator under batching load (its streams' tokens come out
// together at each decode step, role chunk with the first token, usage
// after the finish chunk) raises no integrity error over either transport,
// with outputs long enough for natural gaps and repeats to occur.
func TestE2EIntegrityCleanSim(t *testing.T) {
	if testing.Short() {
		t.Skip("real runs of about a second each")
	}
	for _, tr := range []client.Transport{client.TransportEventLoop, client.TransportNetHTTP} {
		t.Run(string(tr), func(t *testing.T) {
			url, _ := startSim(t, simOpts{Profile: true})
			r := e2e{targets: []string{url}, arrival: workload.ArrivalConfig{Rate: 150, Duration: time.Second},
				workload: workload.Config{InputTokens: workload.FixedDist(64), OutputTokens: workload.FixedDist(96)},
				client:   client.Options{Transport: tr}, grace: 20 * time.Second}.run(t)
			req := checkAccounting(t, r)
			c := r.sum.Counts(recording.TagFilter{})
			if req.OK == 0 || req.OK != req.Scheduled || c.Integrity != 0 {
				t.Errorf("ok %d of %d, integrity errors %d (%v): want all ok, none", req.OK, req.Scheduled, c.Integrity, req.ErrorsByClass)
			}
		})
	}
}
