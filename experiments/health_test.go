package experiments

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
)

// TestCheckHealth: against a real simulator replica the pre-flight check
// and the HTTP probes hold; against an engine-like server whose /health
// answers 503 (a replica still loading its model) the probe does not, and
// one whose chat answers 503 fails the pre-flight check (not only warns);
// a target.sim has nothing to check between runs.
func TestCheckHealth(t *testing.T) {
	t.Parallel()
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, time.Millisecond, time.Millisecond
	healthy := servertest.Start(t, server.Options{Config: cfg})

	var sick atomic.Bool
	sick.Store(true)
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			if sick.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, "ok")
		case "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(engine.Close)
	overloaded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			fmt.Fprint(w, "ok")
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"message":"overloaded"}}`)
	}))
	t.Cleanup(overloaded.Close)

	withProbe := func(url, model string) *spec.Spec {
		s := testSpec(url, time.Second)
		s.Target.LLM.Model = model
		s.SteadyState = []spec.Probe{{HTTP: &spec.HTTPProbe{URL: "{{target}}/health"}}, {Threshold: "error_rate: rate<0.01"}}
		return s
	}
	ctx := context.Background()
	t.Run("healthy", func(t *testing.T) {
		recs, err := CheckHealth(ctx, resolved(t, withProbe(healthy, "llmchaos-sim"), ""), Options{})
		if err != nil {
			t.Fatal(err)
		}
		// The pre-flight check and the HTTP probe; the threshold probe
		// needs load and is left to the run.
		if len(recs) != 2 || !allOK(recs) || !strings.HasPrefix(recs[0].Probe, "pre-flight") || !strings.Contains(recs[1].Probe, "/health") {
			t.Errorf("records %+v, want the pre-flight check and the /health probe, both held", recs)
		}
	})
	t.Run("health answers 503", func(t *testing.T) {
		recs, err := CheckHealth(ctx, resolved(t, withProbe(engine.URL, "m"), ""), Options{NoPreflight: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].OK || !strings.Contains(recs[0].Detail, "answered 503, want 200") {
			t.Errorf("records %+v, want the /health probe failed with 503", recs)
		}
		sick.Store(false)
		recs, _ = CheckHealth(ctx, resolved(t, withProbe(engine.URL, "m"), ""), Options{NoPreflight: true})
		if !allOK(recs) {
			t.Errorf("records %+v once /health answers 200, want held", recs)
		}
	})
	t.Run("requests answered 503", func(t *testing.T) {
		recs, err := CheckHealth(ctx, resolved(t, withProbe(overloaded.URL, "m"), ""), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 2 || recs[0].OK || !strings.Contains(recs[0].Detail, "did not succeed") || !recs[1].OK {
			t.Errorf("records %+v, want the pre-flight check failed (503 is not healthy) and /health held", recs)
		}
	})
	t.Run("sim target", func(t *testing.T) {
		s := withProbe(healthy, "")
		s.Target = spec.Target{Sim: &spec.SimTarget{Replicas: 1}}
		recs, err := CheckHealth(ctx, resolved(t, s, ""), Options{})
		if err != nil || recs != nil {
			t.Errorf("CheckHealth of a target.sim = %+v, %v; want nothing checked", recs, err)
		}
	})
}
