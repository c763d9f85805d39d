package load

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/pipeline"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

func TestPoolSize(t *testing.T) {
	tests := []struct {
		name string
		a    workload.ArrivalConfig
		want int
	}{
		{"closed loop: its users", workload.ArrivalConfig{Concurrency: 12, Requests: 1}, 12},
		{"capped open loop: the cap", workload.ArrivalConfig{Rate: 10, MaxInFlight: 7, Requests: 1}, 7},
		{"open loop: uncapped", workload.ArrivalConfig{Rate: 10, Requests: 1}, UncappedPool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PoolSize(tt.a.WithDefaults()); got != tt.want {
				t.Errorf("PoolSize = %d, want %d", got, tt.want)
			}
		})
	}
}

// streamServer answers every chat completion with a short stream of
// three content chunks and usage.
func streamServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d \"}}]}\n\n", i)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":3}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func testConfig(url string) Config {
	return Config{
		Targets: []string{url}, Model: "m", Seed: 1, Grace: 5 * time.Second,
		Arrival:  workload.ArrivalConfig{Rate: 200, Arrival: workload.ArrivalConstant, Requests: 10}.WithDefaults(),
		Workload: workload.Config{InputTokens: workload.FixedDist(8), OutputTokens: workload.FixedDist(3)}.WithDefaults(),
		Client:   client.Options{Getenv: func(string) string { return "" }},
	}
}

// TestRun: the pipeline runs the load with its companion alongside,
// stops the companion with the engine's outcome, and builds the report
// of every scheduled request.
func TestRun(t *testing.T) {
	cfg := testConfig(streamServer(t))
	var started, stopped bool
	var sawRecorder *recording.Recorder
	cfg.Alongside = func(r *pipeline.Run) func(engine.RunStats, error) {
		started, sawRecorder = true, r.Recorder
		return func(s engine.RunStats, err error) {
			if err != nil || s.Scheduled != 10 {
				t.Errorf("stop got %d scheduled, %v; want 10, nil", s.Scheduled, err)
			}
			stopped = true
		}
	}
	l, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !started || !stopped || sawRecorder != l.Recorder {
		t.Errorf("companion started %v, stopped %v, saw the load's recorder %v", started, stopped, sawRecorder == l.Recorder)
	}
	if l.Observers != nil {
		t.Error("observers started without Config.Observe")
	}
	doc, err := l.Document(report.Meta{ToolVersion: "test", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Requests; got.Scheduled != 10 || got.OK != 10 || got.Lost != 0 {
		t.Errorf("requests %+v, want 10 scheduled, 10 ok, none lost", got)
	}
}

// TestRunStop: Run.Stop from a companion ends the load early, and a
// companion with nothing to stop returns no stop function.
func TestRunStop(t *testing.T) {
	cfg := testConfig(streamServer(t))
	cfg.Arrival = workload.ArrivalConfig{Rate: 1, Arrival: workload.ArrivalConstant, Duration: time.Hour}.WithDefaults()
	cfg.Alongside = func(r *pipeline.Run) func(engine.RunStats, error) {
		r.Stop(errors.New("enough"))
		return nil
	}
	done := make(chan struct{})
	var l *Load
	var err error
	go func() {
		defer close(done)
		l, err = Run(context.Background(), cfg)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a stopped load did not end")
	}
	if err != nil || !l.Stats.Interrupted {
		t.Errorf("Run = %v, interrupted %v; want no error, interrupted", err, l.Stats.Interrupted)
	}
}

// TestRunStageError: a configuration the workload refuses is a
// *StageError naming the stage, and nothing runs.
func TestRunStageError(t *testing.T) {
	cfg := testConfig("http://127.0.0.1:1/v1")
	cfg.Workload.Dataset = "/no/such/dataset.jsonl"
	cfg.Alongside = func(*pipeline.Run) func(engine.RunStats, error) {
		t.Error("the companion started for a load that could not be built")
		return func(engine.RunStats, error) {}
	}
	l, err := Run(context.Background(), cfg)
	se, ok := errors.AsType[*StageError](err)
	if !ok || se.Stage != StageWorkload || l != nil {
		t.Errorf("Run = %v, %v; want a workload *StageError and no load", l, err)
	}
}

// TestRunStartAt: a load with a start instant is built, then waits for
// it: its clock's zero is the instant and nothing is sent before it. An
// instant long past is refused, and ctx ending during the wait is a start
// error that sent nothing.
func TestRunStartAt(t *testing.T) {
	url := streamServer(t)
	// Without the pre-flight check (preflight_test.go tests it): under
	// load its requests took longer than the margins here, and the wait
	// for the instant is what these cases are about.
	t.Run("waits", func(t *testing.T) {
		cfg := testConfig(url)
		cfg.NoPreflight = true
		cfg.StartAt = time.Now().Add(time.Second)
		l, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d := l.Clock.Start().Sub(cfg.StartAt); d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("clock zero %v from the start instant", d)
		}
		if l.Stats.Scheduled != 10 || time.Since(cfg.StartAt) < 0 {
			t.Errorf("scheduled %d, ended %v after the start instant", l.Stats.Scheduled, time.Since(cfg.StartAt))
		}
		doc, err := l.Document(report.Meta{ToolVersion: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if doc.Requests.OK != 10 {
			t.Errorf("ok %d, want 10", doc.Requests.OK)
		}
	})
	t.Run("past", func(t *testing.T) {
		cfg := testConfig(url)
		cfg.StartAt = time.Now().Add(-5 * time.Second)
		_, err := Run(context.Background(), cfg)
		if se, ok := errors.AsType[*StageError](err); !ok || se.Stage != StageStart || !strings.Contains(err.Error(), "passed") {
			t.Errorf("Run = %v, want a start error saying the instant passed", err)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		cfg := testConfig(url)
		cfg.NoPreflight = true
		cfg.StartAt = time.Now().Add(time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := Run(ctx, cfg)
		if se, ok := errors.AsType[*StageError](err); !ok || se.Stage != StageStart || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Run = %v, want a start error from the cancelled context", err)
		}
	})
}
