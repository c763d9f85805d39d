package capacity

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// cuttingEngine is an OpenAI-compatible streaming engine that answers
// every request as vLLM does (a role chunk with the first token, one token
// a chunk, a finish chunk, a usage chunk, [DONE]), except every cutEvery-th,
// whose connection it resets after the first token, as a server whose
// worker dies mid-answer does.
func cuttingEngine(t *testing.T, cutEvery int64) string {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model","owned_by":"test"}]}`)
			return
		}
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		cut := n.Add(1)%cutEvery == 0
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			fmt.Fprintf(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, finish)
			w.(http.Flusher).Flush()
		}
		chunk(`{"role":"assistant","content":"a"}`, "null")
		if cut {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, not an orderly close
			}
			conn.Close()
			return
		}
		for range 3 {
			time.Sleep(2 * time.Millisecond)
			chunk(`{"content":" b"}`, "null")
		}
		chunk(`{}`, `"length"`)
		fmt.Fprint(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":16,"completion_tokens":4,"total_tokens":20}}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// TestStepsTheServerDidNotAnswerDoNotHold: a server resets every fourth
// request mid-answer, and the SLOs bound latency only, which the answered
// requests meet at every load. No step holds (each says how many requests
// went unanswered, by class), so the search reports no knee instead of the
// highest load it tried.
func TestStepsTheServerDidNotAnswerDoNotHold(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a search against a server for seconds; skipped under -short")
	}
	target := cuttingEngine(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{
		Targets: []string{target}, Model: "m", Mode: ModeRate,
		Arrival: workload.ArrivalConfig{Arrival: workload.ArrivalConstant},
		Workload: workload.Config{
			Name: "cut", API: workload.APIChat, InputTokens: workload.FixedDist(16), OutputTokens: workload.FixedDist(4),
		}.WithDefaults(),
		SLOs: mustParse(t, "ttft: p(99)<5s"), Seed: 3,
		Search: SearchConfig{Start: 4, Growth: 2, Min: 2, Max: 8, Precision: 0.25, MaxSteps: 6},
		Length: StepLength{Requests: 20, Min: time.Second, Max: 2 * time.Second, Short: time.Second},
		Warmup: 300 * time.Millisecond, Settle: 100 * time.Millisecond, Grace: 5 * time.Second,
		Limits: ClientLimits{MaxSendLag: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := WriteText(&text, res); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	if res.Knee.Load != 0 || res.Status != StatusBelowMin {
		t.Errorf("status %s knee %+v, want below_min and no knee", res.Status, res.Knee)
	}
	sloHeld := false
	for _, st := range res.Steps {
		if st.Failed > 0 && (st.Verdict != Fail || !strings.Contains(st.Unanswered, "reset")) {
			t.Errorf("step %d at %v req/s: %d of %d failed, verdict %s, unanswered %q; want fail, resets counted",
				st.Index, st.Load, st.Failed, st.Sent, st.Verdict, st.Unanswered)
		}
		held := true
		for _, v := range st.SLOs {
			held = held && v.OK
		}
		sloHeld = sloHeld || held
	}
	if !sloHeld {
		t.Error("no step held its latency SLO: the test shows nothing about unanswered requests")
	}
	if !strings.Contains(text.String(), "the answers (unanswered: ") {
		t.Errorf("the summary does not say the answers failed:\n%s", text.String())
	}
}
