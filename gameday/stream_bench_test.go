package gameday

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/experiments/spec"
)

// stubEngine is a fast OpenAI-compatible server for the benchmark: four
// content chunks per completion at once, vLLM-named metrics, so that the
// machine's cores go to the load and the console, not to a simulator.
func stubEngine(b *testing.B) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"stub","object":"model"}]}`)
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "vllm:kv_cache_usage_perc 0.25\nvllm:num_requests_running 3\nvllm:num_requests_waiting 0\nvllm:num_preemptions_total 0\n")
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		var sb strings.Builder
		for i := range 4 {
			fmt.Fprintf(&sb, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"stub\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d \"},\"finish_reason\":null}]}\n\n", i)
		}
		sb.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"stub\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		sb.WriteString("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"stub\",\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":4,\"total_tokens\":20}}\n\ndata: [DONE]\n\n")
		_, _ = io.WriteString(w, sb.String())
	})
	s := httptest.NewServer(mux)
	b.Cleanup(s.Close)
	return s
}

// processCPU is the CPU time (user + system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGamedayStream measures what the console's live stream costs
// while a game day drives 1,000 requests per second: the CPU time of the
// threads that make its messages every second and write them to two
// connected consoles, as a share of one core over the load's time. The
// target is under 5 %. It also prints the whole process's CPU and the
// rate the load reached, for context.
func BenchmarkGamedayStream(b *testing.B) {
	const (
		rate    = 1000
		measure = 10 * time.Second
	)
	stub := stubEngine(b)
	exp := &spec.Spec{
		APIVersion: spec.APIVersion, Kind: spec.KindExperiment,
		Metadata: spec.Metadata{Name: "stream-bench"},
		Target:   spec.Target{LLM: &spec.LLMTarget{URL: stub.URL + "/v1", Model: "stub"}},
		Workload: spec.Workload{Rate: spec.PerSecondRate(rate), Arrival: "constant", Duration: spec.Duration(time.Hour), InputTokens: mustDist("16"), OutputTokens: mustDist("4")},
	}
	for b.Loop() {
		live := experiments.NewControl(experiments.ControlOptions{})
		tokens, err := NewTokens(nil)
		if err != nil {
			b.Fatal(err)
		}
		srv := NewServer(ServerOptions{Live: live, Spec: exp, Tokens: tokens})
		hs := httptest.NewServer(srv)
		ctx, cancel := context.WithCancel(context.Background())
		hubDone := make(chan struct{})
		go func() { defer close(hubDone); srv.Run(ctx) }()
		type result struct {
			o   *experiments.Outcome
			err error
		}
		x, _, err := Load(Config{Spec: exp})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan result, 1)
		go func() {
			o, err := experiments.RunExperiment(context.Background(), x, experiments.Options{
				RunDir: b.TempDir(), Live: live, NoPreflight: true,
				Observe: experiments.ObserveOptions{Scrape: true, ScrapeInterval: time.Second, Warn: func(error) {}},
			})
			done <- result{o, err}
		}()
		<-live.Ready()
		for range 2 {
			req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+"/api/stream", nil)
			req.Header.Set("Authorization", "Bearer "+tokens[0].Secret)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			go func() {
				defer res.Body.Close()
				_, _ = io.Copy(io.Discard, res.Body)
			}()
		}
		// Measure over whole seconds of load, once it is under way.
		t := time.NewTimer(2 * time.Second)
		<-t.C
		cpu0, proc0, wall0 := srv.StreamCPU(), processCPU(), time.Now()
		t.Reset(measure)
		<-t.C
		cpu1, proc1, wall := srv.StreamCPU(), processCPU(), time.Since(wall0)
		if err := live.End("bench"); err != nil {
			b.Fatal(err)
		}
		r := <-done
		cancel()
		<-hubDone
		srv.End(Ended{})
		hs.Close()
		if r.err != nil {
			b.Fatal(r.err)
		}
		share := float64(cpu1-cpu0) / float64(wall)
		proc := float64(proc1-proc0) / float64(wall)
		reached := float64(r.o.Doc.Requests.Scheduled) / r.o.Doc.DurationS
		b.ReportMetric(100*share, "stream-%core")
		b.ReportMetric(100*proc, "process-%core")
		b.ReportMetric(reached, "req/s")
		b.Logf("console stream: %.2f%% of one core (target < 5%%) over %v at %.0f req/s scheduled (the process: %.0f%% of a core)", 100*share, wall.Round(time.Millisecond), reached, 100*proc)
		if cpu1 == 0 {
			b.Log("the stream's CPU is not measured on this platform")
		} else if share >= 0.05 {
			b.Errorf("the console's stream costs %.2f%% of a core, over the 5%% target", 100*share)
		}
	}
}
