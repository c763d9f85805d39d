package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/batchv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/report"
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

// llmchaosBinary builds the llmchaos command for the test.
func llmchaosBinary(t *testing.T) string {
	t.Helper()
	binDir := t.TempDir()
	if err := testutil.BuildLLMChaos(binDir); err != nil {
		t.Fatal(err)
	}
	return testutil.BinPath(binDir)
}

// shardedSpec is podKillSpec sending to url, 30/s for d, as 3 shards,
// without stop conditions or threshold probes of the steady state (a test
// adds its own); want is its single-process schedule's request count.
func shardedSpec(t *testing.T, c *k8stest.Cluster, ns, url string, d time.Duration) (exp *spec.Spec, file string, want int) {
	t.Helper()
	exp, file = podKillSpec(t, c, ns)
	exp.Target.Kubernetes.URL = url
	exp.Workload.Rate = spec.PerSecondRate(30)
	exp.Workload.Duration = spec.Duration(d)
	exp.Workload.Shards = 3
	exp.StopConditions = nil
	exp.SteadyState = slices.DeleteFunc(exp.SteadyState, func(p spec.Probe) bool { return p.Threshold != "" })
	seed := uint64(11)
	exp.Seed = &seed
	p, err := planSpec(exp, file, nil)
	if err != nil {
		t.Fatal(err)
	}
	return exp, file, scheduleCount(t, p)
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
	exp, file, want := shardedSpec(t, c, ns, url, 10*time.Second)
	exp.Faults[0].Duration = spec.Duration(3 * time.Second)
	shards := &LocalShards{Binary: llmchaosBinary(t)}
	dir := t.TempDir()
	var out, saved bytes.Buffer
	reqs := recording.NewRequestWriter(&saved)
	o, err := runSpec(context.Background(), exp, Options{RunDir: dir, File: file, Out: &out, Shards: shards, ShardStartIn: 3 * time.Second, SaveRequests: reqs})
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
	for _, ph := range []string{PhaseBaseline, PhaseFault} {
		if byPhase[ph] == 0 {
			t.Errorf("no request tagged phase %s: %v", ph, byPhase)
		}
	}
	// The service was seen healthy again live, from the shards' lines
	// (the replacement is Ready before the fault's revert, so the
	// recovery phase may be empty and the rest is after).
	if byPhase[PhaseRecovery]+byPhase[PhaseAfter] == 0 {
		t.Errorf("no request after the fault: %v", byPhase)
	}
	if !slices.ContainsFunc(d.Events, func(e report.EventRecord) bool {
		return e.Source == report.EventSourceRunner && e.Kind == "recovered" && e.Target == "kill-pod"
	}) {
		t.Errorf("no live recovered event of kill-pod:\n%s", out.String())
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
	t.Parallel()
	at := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	access := kube.Access{Kubeconfig: "/etc/llmchaos/kubeconfig", Context: "prod"}
	k := &KubernetesShards{Access: access, Namespace: "llm", Image: "llmchaos:dev", RunID: "exp-1"}
	cfg := k.Job([]string{"--target", "http://vllm/v1", "--rate", "30", "--seed", "11"}, 3, at)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Access != access {
		t.Errorf("access %+v, want %+v: the journal's revert reaches the cluster with it", cfg.Access, access)
	}
	job := cfg.Job()
	if *job.Spec.Completions != 3 || *job.Spec.Parallelism != 3 || job.Namespace != "llm" || !strings.HasPrefix(job.Name, "llmchaos-load-") {
		t.Errorf("job %s/%s completions %d parallelism %d", job.Namespace, job.Name, *job.Spec.Completions, *job.Spec.Parallelism)
	}
	args := job.Spec.Template.Spec.Containers[0].Args
	want := []string{"load", "--target", "http://vllm/v1", "--rate", "30", "--seed", "11",
		"--shard", "$(JOB_COMPLETION_INDEX)/3", "--start-at", "2026-03-01T12:00:30Z", "--out", "-", "--framed", "--progress", "0", "--save-requests", "-"}
	if !slices.Equal(args, want) {
		t.Errorf("args\n %q\nwant\n %q", args, want)
	}
	if job.Spec.Template.Spec.Containers[0].Image != "llmchaos:dev" || job.Labels["llmchaos.io/run"] != "exp-1" {
		t.Errorf("image %s labels %v", job.Spec.Template.Spec.Containers[0].Image, job.Labels)
	}
}

// jobShards runs the shards as the Indexed Job of KubernetesShards on the
// test control plane, whose kwok pods run no container: the shards
// themselves run as local processes, and the Job's pod logs are theirs,
// served by completion index once they ended. When the logs are first
// asked for (the Job has finished, Run has not deleted it yet) it takes
// a look at the run's journal and Jobs.
type jobShards struct {
	local *LocalShards
	kube  *KubernetesShards
	// dir is the run directory; client and ns reach the run's Jobs.
	dir    string
	client *kube.Clientset
	ns     string

	follows atomic.Int32 // pod logs followed
	once    sync.Once
	outs    []ShardOutput
	err     error
	// pending and jobs are what the journal shows pending and the Jobs of
	// the run (label run=sharded) while the logs are read.
	looked  sync.Once
	pending []faults.PendingFault
	jobs    []batchv1.Job
	seenErr error
}

func (j *jobShards) Start(ctx context.Context, jr *faults.Journal, args []string, n int, startAt time.Time, lines LineFunc) error {
	if err := j.local.Start(ctx, jr, args, n, startAt, nil); err != nil {
		return err
	}
	return j.kube.Start(ctx, jr, args, n, startAt, lines)
}

// Follow streams the output of the local shard of pod's completion index
// as it comes, until its process has ended: the pod's log, followed.
func (j *jobShards) Follow(ctx context.Context, pod *corev1.Pod, w io.Writer) error {
	i, err := strconv.Atoi(pod.Annotations[batchv1.JobCompletionIndexAnnotation])
	if err != nil || i < 0 || i >= len(j.local.outs) {
		return fmt.Errorf("pod %s: no completion index in %v", pod.Name, pod.Annotations)
	}
	j.follows.Add(1)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	for {
		var ended bool
		select {
		case <-j.local.ended[i]:
			ended = true
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		b := j.local.outs[i].Bytes()
		if _, err := w.Write(b[sent:]); err != nil {
			return err
		}
		sent = len(b)
		if ended {
			j.look(ctx)
			return nil
		}
	}
}

func (j *jobShards) Collect(ctx context.Context) ([]ShardOutput, error) { return j.kube.Collect(ctx) }

// look keeps, once, what the journal shows pending and the Jobs of the
// run while the shards' logs are read (the Job exists).
func (j *jobShards) look(ctx context.Context) {
	j.looked.Do(func() {
		var perr error
		j.pending, perr = faults.Pending(j.dir)
		list, lerr := j.client.BatchV1().Jobs(j.ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRun + "=sharded"})
		if lerr == nil {
			j.jobs = list.Items
		}
		j.seenErr = errors.Join(perr, lerr)
	})
}

func (j *jobShards) Log(ctx context.Context, pod *corev1.Pod) ([]byte, error) {
	j.once.Do(func() { j.outs, j.err = j.local.Collect(ctx) })
	j.look(ctx)
	if j.err != nil {
		return nil, j.err
	}
	i, err := strconv.Atoi(pod.Annotations[batchv1.JobCompletionIndexAnnotation])
	if err != nil || i < 0 || i >= len(j.outs) {
		return nil, fmt.Errorf("pod %s: no completion index in %v", pod.Name, pod.Annotations)
	}
	return j.local.outs[i].Bytes(), nil
}

// Through KubernetesShards: the run creates an Indexed Job of 3 pods in
// the target's namespace with the shard flags (--save-requests - among
// them), waits for it, reads the shards' logs and records the whole
// single-process schedule. While the Job exists the run's journal holds
// it (shardjob.KindJob, the Job's name, namespace and kubeconfig), so
// that a killed runner's guard would delete it; at the end the run
// deletes the Job and its pods, and the journal has nothing pending.
func TestRunShardedLoadThroughAJob(t *testing.T) {
	skipShort(t)
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	c.CreateWorkload(t, ns, simWorkload)
	url := startTestSim(t) + "/v1"
	exp, file, want := shardedSpec(t, c, ns, url, 8*time.Second)
	exp.Faults = nil
	exp.Thresholds = spec.Thresholds{"requests_lost": {{Threshold: "count==0"}}}
	cl, err := kube.NewCluster(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	client := c.Client(t)
	dir := t.TempDir()
	js := &jobShards{local: &LocalShards{Binary: llmchaosBinary(t)}, dir: dir, client: client, ns: ns}
	access := kube.Access{Kubeconfig: c.Kubeconfig}
	js.kube = &KubernetesShards{Cluster: cl, Access: access, Namespace: ns, Image: "llmchaos:dev", RunID: "sharded", Logs: js}
	var out bytes.Buffer
	o, err := runSpec(context.Background(), exp, Options{RunDir: dir, File: file, Out: &out, Shards: js, ShardStartIn: 3 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if d := o.Doc; d.Requests.Scheduled != int64(want) || d.Requests.Lost != 0 || d.Verdict != report.VerdictPass {
		t.Errorf("%d requests (%d lost), verdict %s; want %d, none lost, pass\n%s", d.Requests.Scheduled, d.Requests.Lost, d.Verdict, want, out.String())
	}
	if len(o.Shards) != 3 {
		t.Errorf("%d shard reports, want 3", len(o.Shards))
	}
	if n := js.follows.Load(); n != 3 {
		t.Errorf("%d pod logs followed, want the 3 shards'", n)
	}
	if js.seenErr != nil {
		t.Fatal(js.seenErr)
	}
	if len(js.jobs) != 1 {
		t.Fatalf("%d Jobs of the run while it ran, want 1", len(js.jobs))
	}
	job := js.jobs[0]
	args := job.Spec.Template.Spec.Containers[0].Args
	if *job.Spec.Completions != 3 || !slices.Contains(args, "$(JOB_COMPLETION_INDEX)/3") || !strings.Contains(strings.Join(args, " "), "--save-requests -") {
		t.Errorf("Job completions %d args %q", *job.Spec.Completions, args)
	}
	// While the Job existed, the journal held it, injected, with what
	// deletes it after a crash.
	// The shards of this test run as local processes (kwok's pods run
	// nothing), and each local shard process is journaled too: the Job
	// is the one entry of its own type.
	var jobsPending []faults.PendingFault
	for _, p := range js.pending {
		if p.Type == shardjob.JournalType {
			jobsPending = append(jobsPending, p)
		}
	}
	if len(jobsPending) != 1 {
		t.Fatalf("journal while the load ran: %d Job entries pending, want the Job: %+v", len(jobsPending), js.pending)
	}
	p := jobsPending[0]
	if p.Type != shardjob.JournalType || p.Target != "job "+ns+"/"+job.Name || p.InjectedAt.IsZero() || len(p.Specs) != 1 || p.Specs[0].Kind != shardjob.KindJob {
		t.Errorf("pending entry %+v, want %s target job %s/%s, injected, one %s spec", p, shardjob.JournalType, ns, job.Name, shardjob.KindJob)
	} else {
		var ref shardjob.JobRef
		if err := json.Unmarshal(p.Specs[0].Data, &ref); err != nil {
			t.Fatal(err)
		}
		if want := (shardjob.JobRef{Access: access, Namespace: ns, Name: job.Name}); ref != want {
			t.Errorf("revert spec %+v, want %+v", ref, want)
		}
	}
	// At the end: the journal closed, the Job and its pods gone.
	if pend, err := faults.Pending(dir); err != nil || len(pend) != 0 {
		t.Errorf("journal after the run: %d pending (%+v), %v; want none", len(pend), pend, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: kube.LabelRun + "=sharded"}
	jobs, err := client.BatchV1().Jobs(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := client.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 0 || len(pods.Items) != 0 {
		t.Errorf("after the run: %d Jobs and %d pods of it left, want none", len(jobs.Items), len(pods.Items))
	}
}

// A sharded load is judged live: 3 shards (local processes of the real
// binary) send 30/s for 30 s to the simulator through the runner's proxy;
// the steady state's threshold probe is checked over their results before
// the fault (so it must have seen them), then a network.latency fault of
// 400 ms at 4 s makes the stop condition ttft p(50)<300ms fail (a median
// the fault moves past 400 ms, which the baseline's slowest requests on a
// busy machine do not: a p99 under 200 ms once failed before the fault,
// at 219 ms under the race detector). The run
// stops long before its 30 s with the stop condition's abort, the shards
// are stopped as Ctrl-C stops a load and report, and every request they
// scheduled is recorded once, none lost.
func TestRunShardedLoadStopsLive(t *testing.T) {
	skipShort(t)
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	c.CreateWorkload(t, ns, simWorkload)
	url := startTestSim(t) + "/v1"
	exp, file, full := shardedSpec(t, c, ns, url, 30*time.Second)
	exp.Faults = []spec.Fault{{Name: "slow", Type: "network.latency", At: spec.Duration(4 * time.Second), Duration: spec.Duration(20 * time.Second),
		Params: map[string]any{"latency": "400ms"}}}
	exp.SteadyState = []spec.Probe{{Threshold: "error_rate: rate<0.1"}}
	exp.StopConditions = []spec.StopCondition{{Threshold: "ttft: p(50)<300ms"}}
	exp.Thresholds = spec.Thresholds{"requests_lost": {{Threshold: "count==0"}}}
	exp.Recovery = spec.Recovery{Window: spec.Duration(2 * time.Second), Hold: spec.Duration(2 * time.Second)}
	shards := &LocalShards{Binary: llmchaosBinary(t)}
	var out, saved bytes.Buffer
	reqs := recording.NewRequestWriter(&saved)
	o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), File: file, Out: &out, Shards: shards, ShardStartIn: 3 * time.Second, SaveRequests: reqs})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if err := reqs.Flush(); err != nil {
		t.Fatal(err)
	}
	d := o.Doc
	if d.Abort == nil || d.Abort.Cause != AbortStopCondition {
		t.Fatalf("abort %+v, want the stop condition's\n%s", d.Abort, out.String())
	}
	// The steady state before the fault was judged on the shards' results.
	var before []report.ProbeRecord
	if d.SteadyState != nil {
		before = slices.DeleteFunc(slices.Clone(d.SteadyState.Before), func(p report.ProbeRecord) bool { return !strings.Contains(p.Probe, "error_rate") })
	}
	if len(before) != 1 || !before[0].OK {
		t.Errorf("steady state before: %+v, want the threshold probe held\n%s", before, out.String())
	} else {
		t.Logf("steady state before: %+v", before[0])
	}
	// Stopped soon after the fault, not at the end of the schedule.
	if d.Requests.Scheduled == 0 || d.Requests.Scheduled >= int64(full)*2/3 {
		t.Errorf("%d requests scheduled of the full schedule's %d: want the run stopped early", d.Requests.Scheduled, full)
	}
	if d.Requests.Lost != 0 {
		t.Errorf("%d requests lost", d.Requests.Lost)
	}
	var n int64
	seen := map[int64]bool{}
	err = recording.ReadRequests(&saved, false, func(r *recording.Result) {
		n++
		if seen[int64(r.Seq)] {
			t.Errorf("seq %d recorded twice", r.Seq)
		}
		seen[int64(r.Seq)] = true
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != d.Requests.Scheduled {
		t.Errorf("%d request lines, the report counts %d scheduled", n, d.Requests.Scheduled)
	}
	if len(o.Shards) != 3 {
		t.Errorf("%d shard reports, want 3 (each stopped shard reports)", len(o.Shards))
	}
	t.Logf("%d of %d requests, abort %s\n%s", d.Requests.Scheduled, full, d.Abort.Reason(), out.String())
}

// The shards send the target's API key and headers: 3 local shards send
// to a server that answers 401 to any API request without the bearer key of
// api_key_env (from the runner's environment, which local shards inherit;
// the Job's pods get it from api_key_secret) and the X-Team header. Every
// request is ok and none was refused; the runner's own /v1/models call,
// which finds the model, carries them too.
func TestRunShardedLoadSendsTheKeyAndHeaders(t *testing.T) {
	skipShort(t)
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	c.CreateWorkload(t, ns, simWorkload)
	var refused, passed atomic.Int64
	srv := newSSEServerWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// As vLLM's --api-key: the API's paths only, not /health.
			if strings.HasPrefix(r.URL.Path, "/v1/") && (r.Header.Get("Authorization") != "Bearer sekret" || r.Header.Get("X-Team") != "qa") {
				refused.Add(1)
				http.Error(w, `{"error":{"message":"unauthorized"}}`, http.StatusUnauthorized)
				return
			}
			passed.Add(1)
			h.ServeHTTP(w, r)
		})
	})
	t.Setenv("LLMCHAOS_TEST_KEY", "sekret")
	exp, file, want := shardedSpec(t, c, ns, srv.URL+"/v1", 8*time.Second)
	exp.Faults = nil
	k := exp.Target.Kubernetes
	k.APIKeyEnv, k.APIKeySecret, k.Headers = "LLMCHAOS_TEST_KEY", "llm-key/token", map[string]string{"X-Team": "qa"}
	exp.Thresholds = spec.Thresholds{"requests_lost": {{Threshold: "count==0"}}, "error_rate": {{Threshold: "rate==0"}}}
	var out bytes.Buffer
	o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), File: file, Out: &out, Shards: &LocalShards{Binary: llmchaosBinary(t)}, ShardStartIn: 3 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if d := o.Doc; d.Requests.Scheduled != int64(want) || d.Requests.OK != int64(want) || d.Verdict != report.VerdictPass {
		t.Errorf("%d scheduled, %d ok (errors %v %v), verdict %s; want %d ok, pass\n%s", d.Requests.Scheduled, d.Requests.OK, d.Requests.ErrorsByClass, d.Requests.TopErrors, d.Verdict, want, out.String())
	}
	if n := refused.Load(); n != 0 {
		t.Errorf("%d requests came without the key or the header (%d with them)", n, passed.Load())
	}
}

// killingShards runs LocalShards and kills shard kill's process with
// SIGKILL after its load has run for after: its output ends where it was
// cut, without its report, as a shard pod's does when its node kills it.
type killingShards struct {
	*LocalShards
	kill  int
	after time.Duration
}

func (k *killingShards) Start(ctx context.Context, jr *faults.Journal, args []string, n int, startAt time.Time, lines LineFunc) error {
	if err := k.LocalShards.Start(ctx, jr, args, n, startAt, lines); err != nil {
		return err
	}
	p := k.procs[k.kill]
	go func() {
		time.Sleep(time.Until(startAt) + k.after)
		_ = p.Kill()
	}()
	return nil
}

// A shard killed in the middle of a sharded load hands back no report: it
// is lost, counted in run.json's shards_lost, and the run goes on with the
// other shards' requests recorded, each once, and its report written (the
// command exits 1 for it); the shards' reports are those of the two that
// ended.
func TestRunShardedLoadCountsALostShard(t *testing.T) {
	skipShort(t)
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	c.CreateWorkload(t, ns, simWorkload)
	url := startTestSim(t) + "/v1"
	exp, file, want := shardedSpec(t, c, ns, url, 10*time.Second)
	exp.Faults[0].Duration = spec.Duration(2 * time.Second)
	shards := &killingShards{LocalShards: &LocalShards{Binary: llmchaosBinary(t)}, kill: 1, after: 2 * time.Second}
	var out, saved bytes.Buffer
	reqs := recording.NewRequestWriter(&saved)
	o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), File: file, Out: &out, Shards: shards, ShardStartIn: 3 * time.Second, SaveRequests: reqs})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if err := reqs.Flush(); err != nil {
		t.Fatal(err)
	}
	d := o.Doc
	if d.ShardsLost != 1 {
		t.Fatalf("shards_lost %d, want 1\n%s", d.ShardsLost, out.String())
	}
	if d.Verdict != report.VerdictAborted || d.Abort == nil || d.Abort.Cause != report.AbortError {
		t.Errorf("verdict %q (abort %+v), want aborted by an error: a run missing a shard's requests never reads as a pass", d.Verdict, d.Abort)
	}
	if len(o.Shards) != 3 || o.Shards[1] != nil || o.Shards[0] == nil || o.Shards[2] == nil {
		t.Fatalf("shard reports %v, want shard 1's alone missing", o.Shards)
	}
	kept := o.Shards[0].Requests.Scheduled + o.Shards[2].Requests.Scheduled
	if d.Requests.Scheduled != kept || kept == 0 || kept >= int64(want) {
		t.Errorf("%d requests recorded, want the two reporting shards' %d (of %d)", d.Requests.Scheduled, kept, want)
	}
	seen := map[uint64]bool{}
	err = recording.ReadRequests(&saved, false, func(r *recording.Result) {
		if r.Seq%3 == 1 || seen[r.Seq] {
			t.Errorf("seq %d recorded (again, or from the lost shard)", r.Seq)
		}
		seen[r.Seq] = true
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "1 of 3 shards lost") {
		t.Errorf("the run does not say a shard was lost:\n%s", out.String())
	}
}
