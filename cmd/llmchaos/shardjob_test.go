package main

import (
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

// TestShardJobFlagErrors: bad shard-job flags and bad load flags are usage
// errors, each named, before anything is created.
func TestShardJobFlagErrors(t *testing.T) {
	t.Parallel()
	load := []string{"--", "--target", "http://vllm:8000/v1", "--model", "m", "--rate", "10", "--duration", "10s", "--seed", "1"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"required", append([]string{"shard-job"}, load...), []string{"namespace: required", "image: required", "shards: 0"}},
		{"reserved load flags", []string{"shard-job", "-n", "x", "--image", "i", "--shards", "2", "--", "--target", "http://h/v1", "--model", "m", "--rate", "1", "--duration", "1s", "--out", "a.json", "--start-at", "now"},
			[]string{"--out is set by the Job itself", "--start-at is set by the Job itself"}},
		{"bad load flag", []string{"shard-job", "-n", "x", "--image", "i", "--shards", "2", "--", "--target", "http://h/v1", "--model", "m", "--rate", "1", "--duration", "1s", "--bogus"},
			[]string{"load flags: unknown flag: --bogus"}},
		{"load too thin to split", []string{"shard-job", "-n", "x", "--image", "i", "--shards", "3", "--", "--target", "http://h/v1", "--model", "m", "--workload", "chat", "--concurrency", "2", "--duration", "1s"},
			[]string{"load flags:", "--concurrency 2 is split over 3 shards"}},
		{"secret", append([]string{"shard-job", "-n", "x", "--image", "i", "--shards", "2", "--api-key-secret", "nokey"}, load...), []string{"--api-key-secret \"nokey\": want NAME/KEY"}},
		{"args before --", []string{"shard-job", "-n", "x", "--image", "i", "--shards", "2", "stray"}, []string{"the load flags go after --"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := run(t, tt.args...)
			if code != exitcode.Usage {
				t.Fatalf("exit %d, want %d:\n%s", code, exitcode.Usage, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
}

// TestShardJobReadsPodLogs: against the test control plane, shard-job
// creates the Indexed Job, waits for it (kwok completes its pods) and
// reads each shard's log through the API server; kwok's pods have no
// kubelet to serve logs, so every shard lacks a report, which fails the
// command with the reason of each (exit 1), and the Job is deleted.
// (Collection from real logs is tested in experiments/shardjob.)
func TestShardJobReadsPodLogs(t *testing.T) {
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	code, stdout, stderr := run(t, "shard-job", "--kubeconfig", c.Kubeconfig, "-n", ns, "--image", "llmchaos:dev", "--shards", "2",
		"--start-in", "1m", "--name", "load-test", "--",
		"--target", "http://vllm:8000/v1", "--model", "m", "--workload", "chat", "--rate", "10", "--duration", "10s", "--seed", "3")
	if code != exitcode.Internal {
		t.Fatalf("exit %d, want %d:\nstdout:\n%s\nstderr:\n%s", code, exitcode.Internal, stdout, stderr)
	}
	for _, w := range []string{"Job " + ns + "/load-test: 2 shards start at", "2 of 2 shards lost", "shard 0", "shard 1", "log of pod " + ns + "/load-test-0-"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	job, err := c.Client(t).BatchV1().Jobs(ns).Get(t.Context(), "load-test", metav1.GetOptions{})
	if err == nil && job.DeletionTimestamp == nil {
		t.Errorf("the Job is left behind: %+v", job.Status)
	}
}
