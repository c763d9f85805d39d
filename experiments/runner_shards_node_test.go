package experiments

import (
	"bytes"
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// createLoadAccount makes the shard pods' service account in ns with the
// Role of deploy/kubernetes/rbac.yaml's llmchaos-load: list and watch pods
// and EndpointSlices, nothing else (its own test there checks the file).
func createLoadAccount(t *testing.T, n *k8stest.Node, ns string) {
	t.Helper()
	client := n.Client(t)
	ctx := t.Context()
	name := shardjob.DefaultPodServiceAccount
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
	}}
	if _, err := client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name}}}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
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
	o, err := Run(ctx, exp, Options{RunDir: dir, File: file, Out: &out, ShardImage: n.Image, ShardStartIn: 5 * time.Second})
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
