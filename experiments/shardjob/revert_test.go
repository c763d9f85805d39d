package shardjob_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
)

// The environment of the crashing run (crashEnv: its run directory).
const (
	crashEnv           = "LLMCHAOS_SHARDJOB_TEST_CRASH_DIR"
	crashKubeconfigEnv = "LLMCHAOS_SHARDJOB_TEST_KUBECONFIG"
	crashNamespaceEnv  = "LLMCHAOS_SHARDJOB_TEST_NAMESPACE"
)

// readingLogs is printed by the crashing run once its Job has finished
// and Run reads the shards' logs: the Job exists, not yet deleted.
const readingLogs = "reading logs"

// blockingLogs says readingLogs once and never answers.
type blockingLogs struct{ once sync.Once }

func (b *blockingLogs) Log(ctx context.Context, _ *corev1.Pod) ([]byte, error) {
	b.once.Do(func() { fmt.Println(readingLogs) })
	<-ctx.Done()
	return nil, ctx.Err()
}

// crashingRun is the helper process: a run with its journal in dir whose
// sharded load (2 shards, kwok completes their pods) is read through
// blockingLogs, so that it waits, its Job there, until it is killed (or,
// bounded, ends after 2 minutes).
func crashingRun(dir string) error {
	j, err := faults.Open(dir)
	if err != nil {
		return err
	}
	defer j.Close()
	access := kube.Access{Kubeconfig: os.Getenv(crashKubeconfigEnv)}
	cl, err := access.Connect()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := jobConfig(os.Getenv(crashNamespaceEnv), access.Kubeconfig, "crashed")
	cfg.Journal = j
	_, err = shardjob.Run(ctx, cl, cfg, &blockingLogs{}, nil)
	return err
}

// jobConfig is a Job of 2 shards labelled run, its load never sent
// (kwok's pods run no container).
func jobConfig(ns, kubeconfig, run string) shardjob.Config {
	return shardjob.Config{
		Access: kube.Access{Kubeconfig: kubeconfig}, Namespace: ns, Image: "llmchaos:dev", Shards: 2, RunID: run,
		LoadArgs: []string{"--target", "http://127.0.0.1:9/v1", "--model", "m", "--seed", "1"},
	}
}

// runObjects returns the names of the Jobs and the pods labelled with run.
func runObjects(t *testing.T, client *kube.Clientset, ns, run string) (jobs, pods []string) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: kube.LabelRun + "=" + run}
	jl, err := client.BatchV1().Jobs(ns).List(t.Context(), sel)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := client.CoreV1().Pods(ns).List(t.Context(), sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jl.Items {
		jobs = append(jobs, j.Name)
	}
	for _, p := range pl.Items {
		pods = append(pods, p.Name)
	}
	return jobs, pods
}

// checkJobEntry checks that p is the journal entry of Job ns/name,
// injected, with the spec that deletes it through kubeconfig.
func checkJobEntry(t *testing.T, p faults.PendingFault, ns, name, kubeconfig string) {
	t.Helper()
	if p.Type != shardjob.JournalType || p.Target != "job "+ns+"/"+name || p.InjectedAt.IsZero() || len(p.Specs) != 1 || p.Specs[0].Kind != shardjob.KindJob {
		t.Fatalf("journal entry %+v, want type %s, target job %s/%s, injected, one %s spec", p, shardjob.JournalType, ns, name, shardjob.KindJob)
	}
	var ref shardjob.JobRef
	if err := json.Unmarshal(p.Specs[0].Data, &ref); err != nil {
		t.Fatal(err)
	}
	if want := (shardjob.JobRef{Access: kube.Access{Kubeconfig: kubeconfig}, Namespace: ns, Name: name}); ref != want {
		t.Errorf("revert spec %+v, want %+v", ref, want)
	}
}

// With a journal, Run records the Job (its name known before it is
// created) and that it was created before it says it started; at the end
// (here a load without reports) it deletes the Job and its pods, waits
// until they are gone and closes the entry.
func TestRunRecordsTheJobInTheJournal(t *testing.T) {
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	client := c.Client(t)
	cl, err := kube.NewCluster(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	j, err := faults.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	cfg := jobConfig(ns, c.Kubeconfig, "journaled")
	cfg.Journal = j
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var during []faults.PendingFault
	var duringErr error
	res, err := shardjob.Run(ctx, cl, cfg, &fakeLogs{logs: [][]byte{[]byte("no report\n"), []byte("no report\n")}}, func(string, time.Time) {
		during, duringErr = faults.Pending(dir)
	})
	if err == nil || !strings.Contains(err.Error(), "2 of 2 shards lost") {
		t.Fatalf("Run: %v, want 2 of 2 shards lost", err)
	}
	if duringErr != nil || len(during) != 1 {
		t.Fatalf("journal once the Job was created: %+v, %v; want the Job pending", during, duringErr)
	}
	checkJobEntry(t, during[0], ns, res.Job, c.Kubeconfig)
	if pend, err := faults.Pending(dir); err != nil || len(pend) != 0 {
		t.Errorf("journal after Run: %+v, %v; want nothing pending", pend, err)
	}
	if jobs, pods := runObjects(t, client, ns, "journaled"); len(jobs)+len(pods) != 0 {
		t.Errorf("after Run: Jobs %q, pods %q left; want none", jobs, pods)
	}
}

// A create the API server refuses (an invalid name) made nothing: the
// journal entry is closed as failed.
func TestRunRefusedCreateClosesTheJournalEntry(t *testing.T) {
	c := k8stest.Start(t)
	cl, err := kube.NewCluster(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	j, err := faults.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	cfg := jobConfig(c.Namespace(t), c.Kubeconfig, "refused")
	cfg.Name, cfg.Journal = "Not_A_DNS_Name", j
	_, err = shardjob.Run(t.Context(), cl, cfg, &fakeLogs{}, nil)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("Run: %v, want the API server's Invalid", err)
	}
	if pend, err := faults.Pending(dir); err != nil || len(pend) != 0 {
		t.Errorf("journal: %+v, %v; want nothing pending", pend, err)
	}
}

// A run killed (SIGKILL: nothing deferred runs) while its Job exists
// leaves the Job pending in its journal; faults.Recover with the
// reverters `llmchaos recover` and the guard use (spec.Reverters) deletes
// it and its pods, and reports it reverted. Reverting it again is a
// no-op: a Job already gone counts as deleted.
func TestRecoverDeletesTheJobOfAKilledRun(t *testing.T) {
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	client := c.Client(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir, crashKubeconfigEnv+"="+c.Kubeconfig, crashNamespaceEnv+"="+ns)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if kerr := cmd.Process.Kill(); kerr != nil { // SIGKILL: no deferred deletion runs
		t.Fatal(kerr)
	}
	_ = cmd.Wait()
	if err != nil || line != readingLogs+"\n" {
		t.Fatalf("the run said %q, %v; want %q", line, err, readingLogs)
	}

	pend, err := faults.Pending(dir)
	if err != nil || len(pend) != 1 {
		t.Fatalf("journal of the killed run: %+v, %v; want the Job pending", pend, err)
	}
	jobs, _ := runObjects(t, client, ns, "crashed")
	if len(jobs) != 1 {
		t.Fatalf("Jobs of the killed run %q, want 1", jobs)
	}
	checkJobEntry(t, pend[0], ns, jobs[0], c.Kubeconfig)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	rep, err := faults.Recover(ctx, dir, spec.Reverters())
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if len(rep.Faults) != 1 || rep.Faults[0].Err != nil || rep.Faults[0].Type != shardjob.JournalType {
		t.Errorf("Recover's report %+v, want the Job reverted", rep.Faults)
	}
	if jobs, pods := runObjects(t, client, ns, "crashed"); len(jobs)+len(pods) != 0 {
		t.Errorf("after Recover: Jobs %q, pods %q left; want none", jobs, pods)
	}
	if pend, err := faults.Pending(dir); err != nil || len(pend) != 0 {
		t.Errorf("journal after Recover: %+v, %v; want nothing pending", pend, err)
	}
	if err := spec.Reverters()[shardjob.KindJob](ctx, pend[0].Specs[0].Data); err != nil {
		t.Errorf("revert of a Job already gone: %v, want nil", err)
	}
}

// A KindJob spec without a namespace or a name is an error, not a no-op.
func TestRevertJobSpecWithoutAName(t *testing.T) {
	revert := shardjob.Reverters()[shardjob.KindJob]
	for _, data := range []string{`{"namespace":"llm"}`, `{"name":"llmchaos-load-x"}`, `[]`} {
		if err := revert(context.Background(), json.RawMessage(data)); err == nil {
			t.Errorf("revert %s: no error", data)
		} else if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("revert %s: %v: reached for a cluster", data, err)
		}
	}
}
