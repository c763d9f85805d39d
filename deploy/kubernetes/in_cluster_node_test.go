package kubernetes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/batchv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

// inClusterExperiment is what the Job runs in the test below: replica.kill
// (a SIGKILL through a short-lived signal pod the runner creates) and then
// replica.restart (a rollout restart of the sim Deployment) on the sim
// pods of deploy/kubernetes under load, the load sent to the pods the
// runner finds through the Service's EndpointSlices. Every call the
// runner makes for it is one the Role must allow.
const inClusterExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata:
  name: in-cluster
target:
  kubernetes: {namespace: llmchaos, selector: app.kubernetes.io/name=llmchaos-sim, service: sim, port: 8000, path: /v1}
workload: {preset: chat, rate: 5, duration: 70s, input_tokens: 16, output_tokens: 8}
faults:
  - name: kill
    type: replica.kill
    at: 10s
    duration: 20s
    params: {image: %[1]s, timeout: 60s, select: {mode: one, min_available: 1}}
  - name: restart
    type: replica.restart
    at: 35s
    duration: 25s
    params: {timeout: 60s}
thresholds:
  "recovery_time{fault:kill}": ["max<60s"]
  "recovery_time{fault:restart}": ["max<60s"]
`

// outsideExperiment asks for what the Role does not grant: the pods of
// the namespace default.
const outsideExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata:
  name: outside
target:
  kubernetes: {namespace: default, selector: app=anything, port: 8000, path: /v1}
workload: {preset: chat, rate: 1, duration: 5s}
faults:
  - name: kill
    type: replica.kill
    at: 1s
    duration: 2s
    params: {image: %[1]s}
`

// TestRunsInTheClusterWithItsRBACOnARealNode applies deploy/kubernetes to
// the real node (its image set to the node's llmchaos), with the Job's
// experiment replaced by one of replica faults: the Job's pod runs
// `llmchaos run` in the cluster as the service account llmchaos, reaching
// the API through the kubernetes Service with its mounted token, and the
// run passes: the Role is enough. A second Job of the same pod template,
// pointed at the namespace default, ends with the API's Forbidden in its
// log: the Role is no more.
func TestRunsInTheClusterWithItsRBACOnARealNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a minute of load on a real node; skipped under -short")
	}
	n := k8stest.StartNode(t)
	n.FixedNamespace(t, namespace)
	objs := render(t)
	var job *unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment", "Job":
			setImage(t, o, n.Image)
		case "ConfigMap":
			if err := unstructured.SetNestedStringMap(o.Object, map[string]string{
				"experiment.yaml": fmt.Sprintf(inClusterExperiment, n.Image),
				"outside.yaml":    fmt.Sprintf(outsideExperiment, n.Image),
			}, "data"); err != nil {
				t.Fatal(err)
			}
		}
		if o.GetKind() == "Job" {
			job = o
		}
	}
	if job == nil {
		t.Fatal("no Job rendered")
	}
	// The outside Job: the same pod template and account, the other file.
	outside := job.DeepCopy()
	outside.SetName("llmchaos-outside")
	containers, _, _ := unstructured.NestedSlice(outside.Object, "spec", "template", "spec", "containers")
	c0 := containers[0].(map[string]any)
	c0["args"] = []any{"run", "/etc/llmchaos/outside.yaml", "--out", "/runs/outside"}
	if err := unstructured.SetNestedSlice(outside.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(outside.Object, map[string]any{"app.kubernetes.io/name": "llmchaos-outside"},
		"spec", "template", "metadata", "labels"); err != nil {
		t.Fatal(err)
	}
	apply(t, n.Cluster, append(objs, outside))

	client := n.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	for _, tt := range []struct {
		job      string
		complete bool
		want     []string
	}{
		{"llmchaos-run", true, []string{"in-cluster", "verdict: pass"}},
		{"llmchaos-outside", false, []string{"forbidden", `"system:serviceaccount:llmchaos:llmchaos"`, `namespace "default"`}},
	} {
		j, err := waitJob(ctx, client, tt.job)
		if err != nil {
			t.Fatalf("job %s: %v\n%s", tt.job, err, jobLogs(client, tt.job))
		}
		logs := jobLogs(client, tt.job)
		t.Logf("job %s: succeeded %d, failed %d; its log:\n%s", tt.job, j.Status.Succeeded, j.Status.Failed, logs)
		if got := j.Status.Succeeded == 1; got != tt.complete {
			t.Errorf("job %s succeeded: %v, want %v", tt.job, got, tt.complete)
		}
		for _, w := range tt.want {
			if !strings.Contains(strings.ToLower(logs), strings.ToLower(w)) {
				t.Errorf("job %s's log does not say %q", tt.job, w)
			}
		}
		if tt.complete && strings.Contains(strings.ToLower(logs), "forbidden") {
			t.Errorf("job %s was refused a call", tt.job)
		}
	}
	// The restart acted (the Deployment's template carries its
	// annotation) and the sim pods came back Ready.
	d, err := client.AppsV1().Deployments(namespace).Get(ctx, "sim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Spec.Template.Annotations[replica.RestartedAtAnnotation]; !ok {
		t.Errorf("Deployment sim's template has no %s: the in-cluster restart did not patch it", replica.RestartedAtAnnotation)
	}
	if _, err := k8stest.WaitPods(ctx, client, namespace, "app.kubernetes.io/name=llmchaos-sim", func(pods []*corev1.Pod) bool {
		return len(pods) == 2 && kube.PodReady(pods[0]) && kube.PodReady(pods[1])
	}); err != nil {
		t.Fatal(err)
	}
}

// setImage sets the image of every container of o's pod template.
func setImage(t *testing.T, o *unstructured.Unstructured, image string) {
	t.Helper()
	path := []string{"spec", "template", "spec", "containers"}
	containers, _, err := unstructured.NestedSlice(o.Object, path...)
	if err != nil || len(containers) == 0 {
		t.Fatalf("%s %s: no containers (%v)", o.GetKind(), o.GetName(), err)
	}
	for _, c := range containers {
		c.(map[string]any)["image"] = image
	}
	if err := unstructured.SetNestedSlice(o.Object, containers, path...); err != nil {
		t.Fatal(err)
	}
}

// waitJob waits until Job name of the namespace has completed or failed.
func waitJob(ctx context.Context, client *kube.Clientset, name string) (*batchv1.Job, error) {
	for {
		j, err := client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && (j.Status.Succeeded > 0 || j.Status.Failed > 0) {
			return j, nil
		}
		select {
		case <-ctx.Done():
			return j, fmt.Errorf("not ended: %w (last error %v)", ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
}

// jobLogs returns the logs of Job name's pods.
func jobLogs(client *kube.Clientset, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		raw, err := client.CoreV1().Pods(namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			fmt.Fprintf(&b, "pod %s: %v\n", p.Name, err)
			continue
		}
		fmt.Fprintf(&b, "pod %s:\n%s\n", p.Name, raw)
	}
	return b.String()
}
