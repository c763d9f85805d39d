package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// engineLike serves /v1/models and streaming /v1/chat/completions the way
// real engines do and the simulator does not: a role-only first chunk,
// content chunks merged two to a write, usage in the last chunk, and the
// connection closed after each stream. Every request takes ttft to its
// first token and itl to each next one; at most slots run at once, the
// others get 429 at once.
func engineLike(t *testing.T, slots int, ttft, itl time.Duration) string {
	t.Helper()
	sem := make(chan struct{}, slots)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			MaxTokens int `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.MaxTokens < 1 {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"server busy"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Connection", "close")
		fl := w.(http.Flusher)
		chunk := func(delta string) string {
			return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `}]}` + "\n\n"
		}
		fmt.Fprint(w, chunk(`{"role":"assistant","content":""}`))
		fl.Flush()
		start := time.Now()
		var pending strings.Builder
		for i := range req.MaxTokens {
			due := start.Add(ttft + time.Duration(i)*itl)
			timer := time.NewTimer(time.Until(due))
			select {
			case <-timer.C:
			case <-r.Context().Done():
				timer.Stop()
				return
			}
			pending.WriteString(chunk(`{"content":" tok"}`))
			if i%2 == 0 && i != req.MaxTokens-1 && i != 0 {
				continue // merged with the next one
			}
			fmt.Fprint(w, pending.String())
			fl.Flush()
			pending.Reset()
		}
		fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":20,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n", req.MaxTokens, 20+req.MaxTokens)
		fl.Flush()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return "http://" + ln.Addr().String() + "/v1"
}

// TestSearchSaysTheClientWasTheLimit: a client capped at 2 requests in
// flight that drops the arrivals beyond (max_in_flight 2, drop) cannot
// send more than 2 / S requests per second, S being a request's time, to
// a server that would hold ten times more. The search must not take that
// for the server's capacity: it ends client-limited, its bracket at the
// client's limit, and says so.
func TestSearchSaysTheClientWasTheLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a search for seconds; skipped under -short")
	}
	ttft, itl, tokens := 100*time.Millisecond, 25*time.Millisecond, 5
	service := ttft + time.Duration(tokens-1)*itl // 200 ms
	clientLimit := 2 / service.Seconds()          // 10 req/s
	target := engineLike(t, 40, ttft, itl)        // 200 req/s

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{
		Targets: []string{target}, Model: "m",
		Arrival: workload.ArrivalConfig{Arrival: workload.ArrivalConstant, MaxInFlight: 2, OnSaturation: workload.SaturationDrop},
		Workload: workload.Config{
			Name: "capped", API: workload.APIChat, InputTokens: workload.FixedDist(16), OutputTokens: workload.FixedDist(tokens), IgnoreEOS: true,
		}.WithDefaults(),
		SLOs: mustParse(t, "e2e: p(90)<1s", "error_rate: rate<0.05"), Seed: 11,
		Search: SearchConfig{Start: 3, Growth: 2, Min: 1, Max: 1000, Precision: 0.1},
		Length: StepLength{Requests: 40, Min: 2 * time.Second, Max: 3 * time.Second, Short: time.Second},
		Warmup: time.Second, Settle: 200 * time.Millisecond, Grace: 2 * time.Second,
		Limits: ClientLimits{MinSentShare: 0.9, MaxSendLag: time.Second, MaxDropShare: 0.02},
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_ = WriteText(&b, res)
	t.Logf("client limit %.1f req/s:\n%s", clientLimit, b.String())
	if res.Status != StatusClientLimited || !res.ClientLimited {
		t.Fatalf("status %s, want client_limited: %s", res.Status, res.Summary)
	}
	if k := res.Knee; k.Lo < 0.75*clientLimit || k.Hi > 1.3*clientLimit || k.HiVerdict != ClientLimited {
		t.Errorf("bracket [%v, %v] (%s), want it around the client's limit %.1f req/s", k.Lo, k.Hi, k.HiVerdict, clientLimit)
	}
	for _, st := range res.Steps {
		if st.Verdict == ClientLimited && !strings.Contains(strings.Join(st.Client, ";"), "dropped at the in-flight cap") {
			t.Errorf("step %d is client-limited for %q, want the drops", st.Index, st.Client)
		}
		if st.Verdict == Fail {
			t.Errorf("step %d at %v failed an SLO: %+v", st.Index, st.Load, st.SLOs)
		}
	}
	if !strings.HasPrefix(res.Summary, "The client, not the server, was the limit") {
		t.Errorf("summary %q", res.Summary)
	}
}

// cancelOnWrite cancels its context at the first progress line: the
// search is interrupted right after its first step.
type cancelOnWrite struct{ cancel context.CancelFunc }

func (c cancelOnWrite) Write(p []byte) (int, error) {
	c.cancel()
	return len(p), nil
}

// TestSearchInterrupted: a search stopped after its first step returns
// what it measured, as interrupted, with the context's error.
func TestSearchInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a step for seconds; skipped under -short")
	}
	target := engineLike(t, 8, 20*time.Millisecond, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := Run(ctx, Config{
		Targets: []string{target}, Model: "m",
		Arrival:  workload.ArrivalConfig{Arrival: workload.ArrivalConstant},
		Workload: workload.Config{API: workload.APIChat, InputTokens: workload.FixedDist(16), OutputTokens: workload.FixedDist(3)}.WithDefaults(),
		SLOs:     mustParse(t, "ttft: p(90)<1s"), Seed: 1,
		Search: SearchConfig{Start: 5},
		Length: StepLength{Requests: 10, Min: time.Second, Max: time.Second, Short: time.Second},
		Warmup: 200 * time.Millisecond, Settle: 5 * time.Second, Grace: time.Second,
		Progress: cancelOnWrite{cancel},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if res == nil || res.Status != StatusInterrupted || len(res.Steps) != 1 || res.Knee.Load != 5 {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(res.Summary, "stopped early: every SLO held at 5 req/s so far") {
		t.Errorf("summary %q", res.Summary)
	}
}
