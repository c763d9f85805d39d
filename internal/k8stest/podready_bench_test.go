package k8stest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

// BenchmarkPodCreateToReady measures how long a pod takes from its creation
// to Running and Ready on a kwok node: the scheduler's bind plus kwok's
// status update, seen through a watch. About 0.1 s here; several seconds,
// growing, means a component's watches fail (see the WatchList note in
// scripts/k8s-controlplane.sh).
func BenchmarkPodCreateToReady(b *testing.B) {
	c := Start(b)
	client := c.Client(b)
	ns := c.Namespace(b)
	var total time.Duration
	for i := range b.N {
		name := "bench-" + strconv.Itoa(i)
		ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
		t0 := time.Now()
		_, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "llmchaos:dev"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			cancel()
			b.Fatalf("creating pod %s: %v", name, err)
		}
		_, err = WaitPods(ctx, client, ns, "bench="+name, func(pods []*corev1.Pod) bool {
			return len(pods) == 1 && kube.PodReady(pods[0])
		})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/pod")
}
