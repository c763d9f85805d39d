package experiments

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
)

// Probes run beside the load against an in-process simulator through the
// in-process fault proxy: they are recorded apart (the load's figures
// count its own requests only, class:probe thresholds read theirs), every
// probe ends as one result, and flipped bytes in the fault window show as
// consistency below 1 there and 1 in the baseline.
func TestRunWithProbes(t *testing.T) {
	t.Parallel()
	skipShort(t)
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, 10*time.Millisecond, 2*time.Millisecond
	url := servertest.Start(t, server.Options{Config: cfg}) + "/v1"
	var in, out spec.Dist
	if err := in.UnmarshalText([]byte("16")); err != nil {
		t.Fatal(err)
	}
	if err := out.UnmarshalText([]byte("8")); err != nil {
		t.Fatal(err)
	}
	exp := &spec.Spec{
		APIVersion: spec.APIVersion, Kind: spec.KindExperiment,
		Metadata: spec.Metadata{Name: "probes"},
		Target:   spec.Target{LLM: &spec.LLMTarget{URL: url, Model: cfg.Model}},
		Workload: spec.Workload{Rate: spec.PerSecondRate(20), Arrival: "constant", Duration: spec.Duration(4 * time.Second), InputTokens: in, OutputTokens: out},
		Probes:   &spec.Probes{Rate: 10, MaxTokens: 8},
		Faults: []spec.Fault{{Name: "flips", Type: "stream.flip", At: spec.Duration(2 * time.Second), Duration: spec.Duration(time.Second),
			Params: map[string]any{"after_tokens": 1}}},
		Recovery: spec.Recovery{Window: spec.Duration(time.Second), Hold: spec.Duration(time.Second), LatencyBand: 20},
		Thresholds: spec.Thresholds{
			"output_consistency{phase:baseline}": {{Threshold: "rate==1"}},
			"output_consistency{phase:fault}":    {{Threshold: "rate<1"}},
			"requests{class:probe}":              {{Threshold: "count>=30"}},
		},
	}
	var buf bytes.Buffer
	o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), Out: &buf, Progress: -1})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, buf.String())
	}
	d := o.Doc
	if d.Verdict != report.VerdictPass {
		t.Errorf("verdict %s: %+v\n%s", d.Verdict, d.Thresholds, buf.String())
	}
	if d.Requests.Sent != 80 {
		t.Errorf("the load's figures count %d requests, want its own 80", d.Requests.Sent)
	}
	c := d.Consistency
	if c == nil || c.Probes < 35 || c.Answered != c.Probes || c.Unit != "token" {
		t.Fatalf("consistency record %+v", c)
	}
	for _, p := range c.Prompts {
		if !p.HasReference || p.BaselineAgreement != 1 {
			t.Errorf("prompt %q: reference %v, agreement %v", p.Prompt, p.HasReference, p.BaselineAgreement)
		}
	}
}
