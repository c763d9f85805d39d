package shardjob_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/batchv1"
)

// TestJobSpec: the Job is Indexed with completions = parallelism = N, one
// try per index, and every pod runs `load` with the same flags, its index
// from $(JOB_COMPLETION_INDEX) (a variable the kubelet expands from the
// env the Job names), one --start-at, the report on stdout.
func TestJobSpec(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	cfg := shardjob.Config{Namespace: "llm", Name: "load-1", Image: "llmchaos:dev", Shards: 4, StartAt: at, RunID: "r",
		LoadArgs: []string{"--target", "http://vllm:8000/v1", "--rate", "40", "--duration", "60s", "--seed", "7"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	job := cfg.Job()
	s := job.Spec
	if *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 4 || *s.Parallelism != 4 {
		t.Errorf("mode %s completions %d parallelism %d, want Indexed 4 4", *s.CompletionMode, *s.Completions, *s.Parallelism)
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 0 {
		t.Errorf("backoffLimitPerIndex %v, want 0 (a shard's start instant passes: no second try)", s.BackoffLimitPerIndex)
	}
	c := s.Template.Spec.Containers[0]
	want := []string{"load", "--target", "http://vllm:8000/v1", "--rate", "40", "--duration", "60s", "--seed", "7",
		"--shard", "$(JOB_COMPLETION_INDEX)/4", "--start-at", "2026-03-01T12:00:30Z", "--out", "-", "--framed", "--progress", "0"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args\n %q\nwant\n %q", c.Args, want)
	}
	if c.Image != "llmchaos:dev" || c.Name != shardjob.Container {
		t.Errorf("container %s image %s", c.Name, c.Image)
	}
	if len(c.Env) == 0 || c.Env[0].Name != shardjob.IndexEnv || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("env %+v, want JOB_COMPLETION_INDEX from the completion index annotation", c.Env)
	}
	if job.Labels[kube.LabelRun] != "r" || s.Template.Labels[kube.LabelManagedBy] != kube.ManagedBy {
		t.Errorf("labels %v / %v", job.Labels, s.Template.Labels)
	}
}

// TestConfigProblems: flags the Job sets itself are refused in the load
// flags, and the required fields are named.
func TestConfigProblems(t *testing.T) {
	cfg := shardjob.Config{Shards: 0, LoadArgs: []string{"--rate", "4", "--shard=0/2", "--out", "x.json"}}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("no problems")
	}
	for _, w := range []string{"namespace: required", "image: required", "shards: 0", "--shard is set by the Job", "--out is set by the Job"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("problems lack %q:\n%v", w, err)
		}
	}
}
