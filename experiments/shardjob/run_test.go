package shardjob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/batchv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
)

// binary is the llmchaos binary, built once per test process.
var binary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "llmchaos-shardjob-test-*")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "llmchaos")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/llmchaos/llmchaos/cmd/llmchaos")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build llmchaos: %v\n%s", err, out)
	}
	return bin, nil
})

// shardLogs sets cfg's start 3 s ahead, runs the shards of cfg as local
// processes of the real binary (what each pod of the Job runs, its index
// expanded), at once, against the load flags' target, and returns each
// one's stdout and stderr interleaved by line as a container log keeps
// them.
func shardLogs(t *testing.T, cfg *shardjob.Config) [][]byte {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real binary's shards for seconds; skipped under -short")
	}
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	cfg.StartAt = time.Now().Add(3 * time.Second).Truncate(time.Millisecond)
	logs := make([][]byte, cfg.Shards)
	errs := make([]error, cfg.Shards)
	var wg sync.WaitGroup
	for i := range cfg.Shards {
		args := slices.Clone(cfg.Args())
		for k, a := range args {
			args[k] = strings.ReplaceAll(a, "$("+shardjob.IndexEnv+")", strconv.Itoa(i))
		}
		wg.Go(func() {
			var out bytes.Buffer
			cmd := exec.Command(bin, args...)
			cmd.Stdout, cmd.Stderr = &out, &out // one writer: whole lines, as a container log
			errs[i] = cmd.Run()
			logs[i] = out.Bytes()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, logs[i])
		}
	}
	return logs
}

// fakeLogs serves each shard's log by the pod's completion index (kwok's
// pods have no logs) and records which pods were asked for.
type fakeLogs struct {
	logs  [][]byte
	mu    sync.Mutex
	asked []string
}

func (f *fakeLogs) Log(_ context.Context, pod *corev1.Pod) ([]byte, error) {
	f.mu.Lock()
	f.asked = append(f.asked, pod.Name)
	f.mu.Unlock()
	i, err := strconv.Atoi(pod.Annotations[batchv1.JobCompletionIndexAnnotation])
	if err != nil || i >= len(f.logs) {
		return nil, fmt.Errorf("pod %s has no completion index: %v", pod.Name, pod.Annotations)
	}
	return f.logs[i], nil
}

// loadConfig is a 3-shard load of 30 requests against url (its start
// is set by shardLogs).
func loadConfig(ns, kubeconfig, url string) shardjob.Config {
	return shardjob.Config{
		Access: kube.Access{Kubeconfig: kubeconfig}, Namespace: ns, Image: "llmchaos:dev", Shards: 3,
		RunID: "shards-test",
		LoadArgs: []string{"--target", url, "--model", "llmchaos-sim", "--rate", "30", "--requests", "30", "--arrival", "constant",
			"--prompt-tokens", "16", "--max-tokens", "4", "--ignore-eos", "--seed", "5", "--grace", "10s"},
	}
}

func simURL(t *testing.T) string {
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, 5*time.Millisecond, time.Millisecond
	return servertest.Start(t, server.Options{Config: cfg}) + "/v1"
}

// TestRunCreatesTheIndexedJobAndMergesTheShards: Run creates an Indexed
// Job of 3 pods with the shards' args, the control plane runs one pod per
// completion index (kwok completes them), and Run reads each shard's
// report from its pod's log and merges them: the merged run holds all 30
// requests of the single-process schedule, one shard each third. Kept,
// the finished Job stays, and its journal entry is closed: it sends
// nothing any more.
func TestRunCreatesTheIndexedJobAndMergesTheShards(t *testing.T) {
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	core := c.Client(t)
	cfg := loadConfig(ns, c.Kubeconfig, simURL(t))
	cfg.Keep = true // to look at the Job and its pods afterwards
	dir := t.TempDir()
	jr, err := faults.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer jr.Close()
	cfg.Journal = jr
	fake := &fakeLogs{logs: shardLogs(t, &cfg)}
	cl, err := kube.NewCluster(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var startedJob string
	res, err := shardjob.Run(ctx, cl, cfg, fake, func(job string, at time.Time) {
		startedJob = job
		if !at.Equal(cfg.StartAt) {
			t.Errorf("started at %v, want %v", at, cfg.StartAt)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if pend, err := faults.Pending(dir); err != nil || len(pend) != 0 {
		t.Errorf("journal after Run: %+v, %v; want the kept Job's entry closed", pend, err)
	}
	if startedJob == "" || startedJob != res.Job {
		t.Errorf("started %q, result %q", startedJob, res.Job)
	}
	job, err := core.BatchV1().Jobs(ns).Get(ctx, res.Job, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *job.Spec.Completions != 3 || *job.Spec.Parallelism != 3 || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("job spec completions %d parallelism %d mode %s", *job.Spec.Completions, *job.Spec.Parallelism, *job.Spec.CompletionMode)
	}
	if job.Status.Succeeded != 3 {
		t.Errorf("job status: %d succeeded, want 3", job.Status.Succeeded)
	}
	pods, err := core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + res.Job})
	if err != nil {
		t.Fatal(err)
	}
	var indexes []string
	for _, p := range pods.Items {
		indexes = append(indexes, p.Annotations[batchv1.JobCompletionIndexAnnotation])
		args := p.Spec.Containers[0].Args
		if !slices.Contains(args, "$(JOB_COMPLETION_INDEX)/3") {
			t.Errorf("pod %s args %q lack the index variable", p.Name, args)
		}
		if p.Labels[kube.LabelRun] != "shards-test" {
			t.Errorf("pod %s labels %v", p.Name, p.Labels)
		}
	}
	slices.Sort(indexes)
	if !slices.Equal(indexes, []string{"0", "1", "2"}) {
		t.Errorf("pods' completion indexes %q, want 0 1 2", indexes)
	}
	if len(fake.asked) != 3 {
		t.Errorf("logs read of %q, want the 3 pods", fake.asked)
	}
	m := res.Merged
	if m == nil {
		t.Fatal("no merged report")
	}
	if m.Requests.Sent != 30 || len(m.MergedFrom) != 3 {
		t.Errorf("merged: %d sent from %d runs, want 30 from 3", m.Requests.Sent, len(m.MergedFrom))
	}
	for i, s := range res.Shards {
		if s.Doc == nil || s.Doc.Shard == nil || s.Doc.Shard.Index != i || s.Doc.Requests.Sent != 10 {
			t.Errorf("shard %d: %+v", i, s)
		}
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %q", res.Warnings)
	}
}

// TestRunWithoutAShardsReport: a shard whose log holds no report is lost:
// Run merges the others, counts it (ShardsLost) and fails with a
// LostError naming the shard and quoting its log; with Partial the same
// merge is a success, with a warning; either way the Job is deleted and
// gone when Run returns.
func TestRunWithoutAShardsReport(t *testing.T) {
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	core := c.Client(t)
	cfg := loadConfig(ns, c.Kubeconfig, simURL(t))
	logs := shardLogs(t, &cfg)
	logs[1] = []byte("llmchaos load: preflight: http://vllm:8000/v1: connection refused\n")
	cl, err := kube.NewCluster(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	res, err := shardjob.Run(ctx, cl, cfg, &fakeLogs{logs: logs}, nil)
	lost, ok := errors.AsType[*shardjob.LostError](err)
	if !ok || lost.Lost != 1 || lost.Shards != 3 {
		t.Fatalf("Run with a shard missing: %v, want a LostError of 1 of 3", err)
	}
	for _, w := range []string{"1 of 3 shards lost", "shard 1", "connection refused"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
	if res == nil || res.Merged == nil || res.Merged.Requests.Sent != 20 || res.Merged.ShardsLost != 1 {
		t.Fatalf("the other shards are not merged with the lost one counted: %+v", res)
	}
	cfg.Partial = true
	res, err = shardjob.Run(ctx, cl, cfg, &fakeLogs{logs: logs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Merged.Requests.Sent != 20 || len(res.Warnings) == 0 {
		t.Errorf("partial merge: %d sent, warnings %q; want 20 and a warning", res.Merged.Requests.Sent, res.Warnings)
	}
	jobs, err := core.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		t.Errorf("job %s left behind (deleting since %v)", j.Name, j.DeletionTimestamp)
	}
}
