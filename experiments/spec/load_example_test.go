package spec_test

import (
	"errors"
	"fmt"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/field"
)

func ExampleParse() {
	src := `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: demo}
target:
  sim: {replicas: 2}
workload: {preset: chat, rate: 5, duraton: 60s}
faults:
  - {name: slow, type: network.latency, at: 10s, duration: 10s, params: {latency: 0s}}
thresholds:
  "recovery_time{fault:slw}": ["max<20s"]
  ttft: ["p(99)<500xs"]
`
	_, _, err := spec.Parse("demo.yaml", []byte(src))
	var ps field.Problems
	if errors.As(err, &ps) {
		for _, p := range ps {
			fmt.Println(p)
		}
	}
	// Output:
	// demo.yaml:6:35: workload.duraton: unknown key "duraton"; did you mean "duration"?
	// demo.yaml:8:83: faults[0].params.latency: latency: 0s, want more than 0
	// demo.yaml:10:24: thresholds["recovery_time{fault:slw}"]: fault "slw" is not declared under faults; did you mean "slow"?
	// demo.yaml:11:20: thresholds.ttft[0]: unknown unit "xs" (want ms, s or us) in "p(99)<500xs"
}

func ExampleSpec_WithDefaults() {
	exp, _, err := spec.Parse("demo.yaml", []byte(`apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: demo}
target: {sim: {}}
workload: {preset: chat, rate: 5, duration: 60s}
steady_state: [{http: {url: "{{target}}/health"}}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	d := exp.WithDefaults()
	probe := d.SteadyState[0].HTTP
	fmt.Println(d.Target.Sim.Replicas, d.Target.Sim.Model, *d.Seed, d.Recovery.Window, d.Recovery.Hold)
	fmt.Println(probe.Method, probe.ExpectStatus, probe.Timeout)
	u, _ := probe.ExpandURL("http://127.0.0.1:8001/v1")
	fmt.Println(u)
	// Output:
	// 1 llmchaos-sim 1 5s 10s
	// GET 200 5s
	// http://127.0.0.1:8001/health
}
