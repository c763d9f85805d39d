package experiments

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/report"
)

// nodeSimWorkload is simWorkload on the real node: three pods that run
// `llmchaos sim` behind a Service.
func nodeSimWorkload(n *k8stest.Node) k8stest.Workload {
	w := simWorkload
	w.Node = n.Name
	w.Container = n.SimContainer("--latency", "constant", "--ttft", "10ms", "--itl", "2ms")
	return w
}

// createLoadAccount makes the shard pods' service account in ns, allowed
// the calls a shard that follows the target's pods makes and no other
// (what deploy/kubernetes/rbac.yaml's llmchaos-load grants: its own test
// checks the file against the same list).
func createLoadAccount(t *testing.T, n *k8stest.Node, ns string) {
	t.Helper()
	n.CreateServiceAccount(t, ns, shardjob.DefaultPodServiceAccount, k8stest.RulesFor(shardjob.PodAPICalls()))
}

// TestRunShardedLoadOnARealNode: workload.shards: 3 on a real node. The
// runner's Indexed Job runs three pods of the llmchaos image, each
// `llmchaos load` of one shard that follows the simulator pods through the
// API (in-cluster, as the llmchaos-load service account) and sends to
// their IPs; each writes its report framed into the log a real container
// runtime makes of its stdout and stderr together. Every shard's report is
// merged: the run holds the single-process schedule, none lost, no shard
// lost. make soak-shards runs it 20 times.
func TestRunShardedLoadOnARealNode(t *testing.T) {
	skipShort(t)
	n := k8stest.StartNode(t)
	ns := n.Namespace(t)
	n.CreateWorkload(t, ns, nodeSimWorkload(n))
	createLoadAccount(t, n, ns)
	exp, file, want := shardedSpec(t, n.Cluster, ns, "", 8*time.Second)
	exp.Faults = nil
	exp.Thresholds = spec.Thresholds{"requests_lost": {{Threshold: "count==0"}}}
	dir := t.TempDir()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	o, err := runSpec(ctx, exp, Options{RunDir: dir, File: file, Out: &out, ShardImage: n.Image, ShardStartIn: 5 * time.Second})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	d := o.Doc
	t.Logf("%d shard reports, %d shards lost, %d requests (%d ok, %d lost)", len(o.Shards), d.ShardsLost, d.Requests.Scheduled, d.Requests.OK, d.Requests.Lost)
	if len(o.Shards) != 3 || d.ShardsLost != 0 {
		t.Errorf("%d shard reports, %d shards lost; want 3, none lost\n%s", len(o.Shards), d.ShardsLost, out.String())
	}
	if d.Requests.Scheduled != int64(want) || d.Requests.Lost != 0 || d.Requests.OK != int64(want) || d.Verdict != report.VerdictPass {
		t.Errorf("%d requests (%d ok, %d lost), verdict %s; want %d, all ok, pass\n%s", d.Requests.Scheduled, d.Requests.OK, d.Requests.Lost, d.Verdict, want, out.String())
	}
}
