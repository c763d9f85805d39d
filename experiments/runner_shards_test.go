package experiments

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// scheduleCount is the number of arrivals of p's whole schedule, as one
// process draws them.
func scheduleCount(t *testing.T, p *plan) int {
	t.Helper()
	arr, err := workload.NewArrivals(p.ac, rand.New(rand.NewPCG(p.seed, engine.SeedStreamArrivals)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, ok := arr.Next(); !ok {
			return n
		}
		n++
	}
}

// A sharded load with a Kubernetes target: 3 shards (local processes of
// the real binary, started at one instant) send the experiment's load (30/s for
// 10 s) to the URL while the runner kills a pod at 3 s; at the end their results
// are recorded on the run clock and tagged by phase from their send times.
// The run holds exactly the single-process schedule, each request once,
// every phase has requests, the kill's recovery is measured on them and
// the verdict passes as for a load in one process.
func TestRunShardedLoadKillsAPod(t *testing.T) {
	skipShort(t)
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	before := c.CreateWorkload(t, ns, simWorkload)
	url := startTestSim(t) + "/v1"
	exp, file := podKillSpec(t, c, ns)
	exp.Target.Kubernetes.URL = url
	exp.Workload.Rate = spec.PerSecondRate(30)
	exp.Workload.Duration = spec.Duration(10 * time.Second)
	exp.Faults[0].Duration = spec.Duration(3 * time.Second)
	exp.Workload.Shards = 3
	// Nothing live with shards: no stop conditions, no threshold probe of
	// the steady state.
	exp.StopConditions = nil
	exp.SteadyState = slices.DeleteFunc(exp.SteadyState, func(p spec.Probe) bool { return p.Threshold != "" })
	seed := uint64(11)
	exp.Seed = &seed
	p, err := newPlan(exp, file, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := scheduleCount(t, p)

	binDir := t.TempDir()
	if err := testutil.BuildLLMChaos(binDir); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var out, saved bytes.Buffer
	reqs := recording.NewRequestWriter(&saved)
	shards := &LocalShards{Binary: testutil.BinPath(binDir)}
	o, err := Run(context.Background(), exp, Options{RunDir: dir, File: file, Out: &out, Shards: shards, ShardStartIn: 3 * time.Second, SaveRequests: reqs})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if err := reqs.Flush(); err != nil {
		t.Fatal(err)
	}
	checkPodKill(t, c, ns, before, o, dir, out.String())
	d := o.Doc
	if d.Requests.Scheduled != int64(want) {
		t.Errorf("%d requests recorded, want the single-process schedule's %d", d.Requests.Scheduled, want)
	}
	if d.Requests.OK == 0 {
		t.Errorf("no request ok: %+v", d.Requests)
	}
	// Each request once, every seq of the schedule.
	var seqs []int
	byPhase := map[string]int{}
	err = recording.ReadRequests(&saved, false, func(r *recording.Result) {
		seqs = append(seqs, int(r.Seq))
		byPhase[r.Tags.Phase]++
		if r.Tags.Endpoint != url {
			t.Errorf("seq %d tagged endpoint %q, want %s", r.Seq, r.Tags.Endpoint, url)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(seqs)
	if len(seqs) != want || len(seqs) > 0 && (seqs[0] != 0 || seqs[len(seqs)-1] != want-1 || len(slices.Compact(slices.Clone(seqs))) != want) {
		t.Errorf("saved seqs: %d of them, from %v to %v; want 0…%d once each", len(seqs), seqs[:min(len(seqs), 1)], seqs[max(len(seqs)-1, 0):], want-1)
	}
	for _, ph := range []string{PhaseBaseline, PhaseFault, PhaseRecovery} {
		if byPhase[ph] == 0 {
			t.Errorf("no request tagged phase %s: %v", ph, byPhase)
		}
	}
	var phases []string
	for _, ph := range d.Phases {
		phases = append(phases, ph.Name)
	}
	if !slices.Contains(phases, PhaseBaseline) || !slices.Contains(phases, PhaseFault) {
		t.Errorf("phases %q, want baseline and fault", phases)
	}
	// The shards' own reports: their index, a third of the load each.
	if len(o.Shards) != 3 {
		t.Fatalf("%d shard reports, want 3", len(o.Shards))
	}
	var sum int64
	for i, s := range o.Shards {
		if s == nil || s.Shard == nil || s.Shard.Index != i || s.Shard.Count != 3 {
			t.Errorf("shard %d's report: %+v", i, s)
			continue
		}
		sum += s.Requests.Scheduled
	}
	if sum != int64(want) {
		t.Errorf("shards scheduled %d in all, want %d", sum, want)
	}
	if !strings.Contains(out.String(), "3 shards start at") {
		t.Errorf("the run does not say when its shards start:\n%s", out.String())
	}
	t.Logf("%d requests, by phase %v\n%s", want, byPhase, out.String())
}

// The Job of a sharded experiment on Kubernetes: N completions of the
// load, each pod its index as --shard, one --start-at, its report and its
// request lines on stdout.
func TestKubernetesShardsJob(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	k := &KubernetesShards{Namespace: "llm", Image: "llmchaos:dev", RunID: "exp-1"}
	cfg := k.Job([]string{"--target", "http://vllm/v1", "--rate", "30", "--seed", "11"}, 3, at)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	job := cfg.Job()
	if *job.Spec.Completions != 3 || *job.Spec.Parallelism != 3 || job.Namespace != "llm" || !strings.HasPrefix(job.Name, "llmchaos-load-") {
		t.Errorf("job %s/%s completions %d parallelism %d", job.Namespace, job.Name, *job.Spec.Completions, *job.Spec.Parallelism)
	}
	args := job.Spec.Template.Spec.Containers[0].Args
	want := []string{"load", "--target", "http://vllm/v1", "--rate", "30", "--seed", "11",
		"--shard", "$(JOB_COMPLETION_INDEX)/3", "--start-at", "2026-03-01T12:00:30Z", "--out", "-", "--progress", "0", "--save-requests", "-"}
	if !slices.Equal(args, want) {
		t.Errorf("args\n %q\nwant\n %q", args, want)
	}
	if job.Spec.Template.Spec.Containers[0].Image != "llmchaos:dev" || job.Labels["llmchaos.io/run"] != "exp-1" {
		t.Errorf("image %s labels %v", job.Spec.Template.Spec.Containers[0].Image, job.Labels)
	}
}
