package experiments

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
)

// sseServer is a small OpenAI-compatible server for runner tests: it
// streams a few content chunks per chat completion, answers /health and
// /v1/models, and fails (HTTP 500) while failing is set.
type sseServer struct {
	*httptest.Server
	failing   atomic.Bool
	unhealthy atomic.Bool
	requests  atomic.Int64
}

func newSSEServer(t testing.TB) *sseServer {
	t.Helper()
	return newSSEServerWith(t, nil)
}

// newSSEServerWith is newSSEServer with its handler wrapped by wrap (nil:
// as it is).
func newSSEServerWith(t testing.TB, wrap func(http.Handler) http.Handler) *sseServer {
	t.Helper()
	s := &sseServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		if s.unhealthy.Load() {
			http.Error(w, "loading", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"stub-model","object":"model"}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if s.failing.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"message":"injected","type":"server_error","code":"internal_server_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		chunk := func(delta string) {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"stub-model\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", delta)
			fl.Flush()
		}
		chunk(`{"role":"assistant"}`)
		t := time.NewTimer(0)
		defer t.Stop()
		for i := range 4 {
			t.Reset(2 * time.Millisecond)
			select {
			case <-r.Context().Done():
				return
			case <-t.C:
			}
			chunk(fmt.Sprintf(`{"content":"tok%d "}`, i))
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"stub-model\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"stub-model\",\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":4,\"total_tokens\":20}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
		fl.Flush()
	})
	var h http.Handler = mux
	if wrap != nil {
		h = wrap(mux)
	}
	s.Server = httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// fakeFault is a faults.Fault for runner tests: Inject turns its effect on
// (through apply), Undo turns it off; it records when each happened and
// fails the test at cleanup if an Inject was not undone.
type fakeFault struct {
	name  string
	apply func(on bool)
	// injectErr, when set, makes Inject fail.
	injectErr error

	mu       sync.Mutex
	injected []time.Time
	undone   []time.Time
	active   bool
}

var _ faults.Fault = (*fakeFault)(nil)

func newFakeFault(t testing.TB, name string, apply func(on bool)) *fakeFault {
	t.Helper()
	f := &fakeFault{name: name, apply: apply}
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.active {
			t.Errorf("fault %s: injected at %v and never undone", f.name, f.injected)
		}
	})
	return f
}

// Inject implements faults.Fault, recording a revert spec first as the
// contract asks.
func (f *fakeFault) Inject(_ context.Context, log faults.RevertLog) (faults.Undo, error) {
	if f.injectErr != nil {
		return nil, f.injectErr
	}
	if err := log.Will(faults.RevertSpec{Kind: "test-fake", Data: []byte(`{"fault":"` + f.name + `"}`)}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.injected = append(f.injected, time.Now())
	f.active = true
	f.mu.Unlock()
	if f.apply != nil {
		f.apply(true)
	}
	var once sync.Once
	return func(context.Context) error {
		once.Do(func() {
			if f.apply != nil {
				f.apply(false)
			}
			f.mu.Lock()
			f.undone = append(f.undone, time.Now())
			f.active = false
			f.mu.Unlock()
		})
		return nil
	}, nil
}

// counts returns how many times the fault was injected and undone.
func (f *fakeFault) counts() (injected, undone int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.injected), len(f.undone)
}

// isActive reports whether the fault is injected now.
func (f *fakeFault) isActive() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.active
}

// testSpec returns a valid experiment against url: a small chat load at
// 40 req/s for dur, with short recovery windows, and faults.
func testSpec(url string, dur time.Duration, fs ...spec.Fault) *spec.Spec {
	return &spec.Spec{
		APIVersion: spec.APIVersion, Kind: spec.KindExperiment,
		Metadata: spec.Metadata{Name: "runner-test"},
		Target:   spec.Target{LLM: &spec.LLMTarget{URL: url + "/v1", Model: "stub-model"}},
		Workload: spec.Workload{
			Rate: spec.PerSecondRate(40), Arrival: "constant", Duration: spec.Duration(dur),
			InputTokens: mustDist("16"), OutputTokens: mustDist("4"),
		},
		Faults: fs,
		// The stub server answers in about a millisecond; under the race
		// detector on a shared 2-core machine its p99 swings by tens of
		// milliseconds, more than the default latency band (1.5x, at least
		// 50 ms above the baseline). These tests judge recovery by errors;
		// the band has its own tests on synthetic series (recovery tests).
		Recovery: spec.Recovery{Window: spec.Duration(time.Second), Hold: spec.Duration(time.Second), LatencyBand: 20},
	}
}

func mustDist(s string) spec.Dist {
	var d spec.Dist
	if err := d.UnmarshalText([]byte(s)); err != nil {
		panic(err)
	}
	return d
}

// fakeBuilds returns test hooks that build the fault named name as f
// (every fault of a spec must be listed).
func fakeBuilds(fs map[string]faults.Fault) *testHooks {
	return &testHooks{build: func(pf *plannedFault) (faults.Fault, error) {
		f, ok := fs[pf.spec.Name]
		if !ok {
			return nil, fmt.Errorf("no fake for fault %q", pf.spec.Name)
		}
		return f, nil
	}}
}

// httpErrorFault is a spec fault the fakes stand in for: its type only
// needs to validate.
func httpErrorFault(name string, at, dur time.Duration) spec.Fault {
	return spec.Fault{Name: name, Type: "http.error", At: spec.Duration(at), Duration: spec.Duration(dur), Params: map[string]any{"status": 500}}
}

// runSpec resolves exp, the experiment of opts.File, as every verb
// resolves one before it runs it (spec.Resolve), and runs it.
func runSpec(ctx context.Context, exp *spec.Spec, opts Options) (*Outcome, error) {
	x, err := spec.Resolve(exp, opts.File)
	if err != nil {
		if opts.Live != nil {
			opts.Live.finish()
		}
		return nil, err
	}
	return RunExperiment(ctx, x, opts)
}

// dryRunSpec is runSpec's dry run.
func dryRunSpec(w io.Writer, exp *spec.Spec, opts Options) error {
	x, err := spec.Resolve(exp, opts.File)
	if err != nil {
		return err
	}
	return DryRunExperiment(w, x, opts)
}

// planSpec resolves exp, the experiment of file, and plans it; seed,
// when not nil, replaces the experiment's.
func planSpec(exp *spec.Spec, file string, seed *uint64) (*plan, error) {
	x, err := spec.Resolve(exp, file)
	if err != nil {
		return nil, err
	}
	return planOf(x, seed)
}

// resolved is exp, the experiment of file, resolved; the test fails when
// it is invalid.
func resolved(t testing.TB, exp *spec.Spec, file string) *spec.Experiment {
	t.Helper()
	x, err := spec.Resolve(exp, file)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
