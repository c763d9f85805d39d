package observe_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/telemetry/observe"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// A run starts its observers, hands each Result to Observe (through
// engine.Config.Observe) and closes them at the end; here only the live
// endpoint is on, on a port the kernel picks.
func ExampleStart() {
	obs, err := observe.Start(context.Background(), observe.Options{MetricsListen: "127.0.0.1:0", Run: "r1"})
	if err != nil {
		panic(err)
	}
	defer obs.Close(context.Background())
	obs.Observe(&recording.Result{Sent: time.Second, FirstToken: 1200 * time.Millisecond, End: 2 * time.Second,
		Outcome: recording.OutcomeOK, ContentChunks: 8, Tags: recording.Tags{Endpoint: "http://127.0.0.1:8000/v1"}})

	resp, err := http.Get(obs.MetricsURL())
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "llmchaos_requests_total{") && strings.Contains(line, `outcome="ok"`) ||
			strings.HasPrefix(line, "llmchaos_output_tokens_total{") {
			fmt.Println(line)
		}
	}
	// Output:
	// llmchaos_output_tokens_total{class="",endpoint="http://127.0.0.1:8000/v1",phase="",run="r1"} 8
	// llmchaos_requests_total{class="",endpoint="http://127.0.0.1:8000/v1",error_class="",outcome="ok",phase="",run="r1"} 1
}
