package llm_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// stall answers nothing until the client gives up (an overloaded server
// that queues every request); after a header when header is set. Reading
// the body lets the server see the client go.
func stall(header bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if header {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			_ = http.NewResponseController(w).Flush()
		}
		<-r.Context().Done()
	}
}

// slowTokens streams a token every 10 ms, forever: healthy, but never done
// before the client's own cancellation plan.
func slowTokens(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		_, _ = w.Write([]byte(`data: {"choices":[{"index":0,"delta":{"content":"x"}}]}` + "\n\n"))
		_ = rc.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}

// TestUnfinishedRequestsAreErrors: a request the tool cut because the run
// ended or a timeout fired did not get its answer and counts in error_rate,
// so the catalog's error_rate threshold fails on an overloaded server; a
// cancel the workload asked for stays cancelled and is not an error.
func TestUnfinishedRequestsAreErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine on real time")
	}
	tests := []struct {
		name      string
		handler   http.HandlerFunc
		client    client.Options
		grace     time.Duration
		workload  workload.Config
		wantClass recording.ErrorClass // every request ends failed with it; "" cancelled
	}{
		{"server never answers, grace expires", stall(false), client.Options{}, 200 * time.Millisecond, workload.Config{}, recording.ClassTimeout},
		{"server too slow for the request timeout", stall(false), client.Options{RequestTimeout: 100 * time.Millisecond}, 5 * time.Second, workload.Config{}, recording.ClassTimeout},
		{"no first token within the ttft timeout", stall(true), client.Options{TTFTTimeout: 100 * time.Millisecond}, 5 * time.Second, workload.Config{}, recording.ClassTimeout},
		{"the workload cancels on purpose", slowTokens, client.Options{}, 5 * time.Second,
			workload.Config{CancelShare: 1, CancelAfter: workload.FixedDuration(50 * time.Millisecond)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			sum := runEngine(t, srv.URL+"/v1", tt.client, tt.grace, tt.workload)
			req := sum.Requests()
			if req.Scheduled == 0 || req.Lost != 0 {
				t.Fatalf("scheduled %d, lost %d: want requests, none lost", req.Scheduled, req.Lost)
			}
			ths, err := assertions.Parse("error_rate: rate<0.01")
			if err != nil {
				t.Fatal(err)
			}
			passed := assertions.Evaluate(assertions.NewSummarySource(sum), ths).OK()
			if tt.wantClass == "" {
				if req.Cancelled != req.Scheduled || req.Failed != 0 || !passed {
					t.Errorf("cancelled %d, failed %d of %d, error_rate threshold passed %v: want every request cancelled on purpose, not an error",
						req.Cancelled, req.Failed, req.Scheduled, passed)
				}
				return
			}
			if got := req.ErrorsByClass[string(tt.wantClass)]; got != req.Scheduled || req.Cancelled != 0 {
				t.Errorf("%s %d, cancelled %d of %d (errors %v): want every request failed %s",
					tt.wantClass, got, req.Cancelled, req.Scheduled, req.ErrorsByClass, tt.wantClass)
			}
			if c := sum.Counts(recording.TagFilter{}); passed {
				t.Errorf("error_rate: rate<0.01 passed with error rate %.2f: want it to fail on a server that answered nothing", c.ErrorRate())
			}
		})
	}
}

// runEngine runs 300 ms of 20 requests per second at url and returns the
// summary.
func runEngine(t *testing.T, url string, copts client.Options, grace time.Duration, wc workload.Config) *recording.Summary {
	t.Helper()
	wc.InputTokens, wc.OutputTokens = workload.FixedDist(8), workload.FixedDist(1000)
	w, err := workload.New(wc.WithDefaults(), rand.New(rand.NewPCG(1, engine.SeedStreamWorkloadSetup)))
	if err != nil {
		t.Fatal(err)
	}
	copts.Clock = recording.NewRunClock()
	copts.Getenv = func(string) string { return "" }
	client, err := client.New(copts)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	rec := recording.NewRecorder(recording.Options{})
	eng, err := engine.New(engine.Config{
		Targets: []string{url}, Model: "m", Workload: w, Client: client, Recorder: rec, Seed: 1, Grace: grace,
		Arrival: workload.ArrivalConfig{Rate: 20, Arrival: workload.ArrivalConstant, Duration: 300 * time.Millisecond}.WithDefaults(),
	})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := eng.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rec.Finish(stats.End)
}
