package telemetry_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/internal/promexpo/promexpotest"
	"github.com/llmchaos/llmchaos/telemetry"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The load's result consumer calls Observe once per Result; the runner
// marks faults and thresholds; Serve (or remote write) publishes it all.
func ExampleExporter() {
	exp, err := telemetry.New(telemetry.Options{}) // its own registry
	if err != nil {
		panic(err)
	}
	exp.Observe(&recording.Result{
		Scheduled: time.Second, Sent: time.Second, FirstToken: 1250 * time.Millisecond, End: 3 * time.Second,
		ITLMicros: []uint32{25_000, 25_000}, Outcome: recording.OutcomeOK, ContentChunks: 3,
	})
	exp.Observe(&recording.Result{Sent: time.Second, End: 2 * time.Second, Outcome: recording.OutcomeFailed, Class: recording.ClassHTTP429})
	exp.SetInFlight(2)
	exp.FaultActive("slow-net", "network-latency", true)

	err = testutil.GatherAndCompare(promexpotest.Gatherer(exp.Gatherer()), strings.NewReader(`
# HELP llmchaos_fault_active 1 while the fault is applied, 0 after it was reverted.
# TYPE llmchaos_fault_active gauge
llmchaos_fault_active{fault="slow-net",type="network-latency"} 1
# HELP llmchaos_in_flight Requests sent and not yet ended.
# TYPE llmchaos_in_flight gauge
llmchaos_in_flight 2
`), telemetry.NameFaultActive, telemetry.NameInFlight)
	fmt.Println("gauges as expected:", err == nil)
	n, _ := testutil.GatherAndCount(promexpotest.Gatherer(exp.Gatherer()), telemetry.NameRequests)
	fmt.Println("request series (every valid outcome/class pair):", n)
	// Output:
	// gauges as expected: true
	// request series (every valid outcome/class pair): 10
}
