package k8stest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/appsv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/discoveryv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/intstr"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

func TestMain(m *testing.M) { Main(m) }

// TestDeploymentReplacesDeletedPodAndEndpointSlicesFollow proves that the
// control plane does what the Kubernetes tests of llmchaos rely on: the
// scheduler puts a Deployment's pods on kwok nodes, kwok makes them Running
// and Ready with IPs, the ReplicaSet controller replaces a pod deleted with
// grace 0, and the EndpointSlice controller lists the Ready pods of a
// Service.
func TestDeploymentReplacesDeletedPodAndEndpointSlicesFollow(t *testing.T) {
	c := Start(t)
	client := c.Client(t)
	ns := c.Namespace(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	labels := map[string]string{"app": "sim"}
	replicas := int32(2)
	_, err := client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "sim"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"type": "kwok"},
					Containers: []corev1.Container{{
						Name:  "sim",
						Image: "llmchaos:dev",
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}},
					}},
				},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating deployment: %v", err)
	}

	twoReady := func(pods []*corev1.Pod) bool {
		return len(pods) == 2 && kube.PodReady(pods[0]) && kube.PodReady(pods[1])
	}
	pods, err := WaitPods(ctx, client, ns, "app=sim", twoReady)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if !strings.HasPrefix(p.Spec.NodeName, "kwok-node-") {
			t.Errorf("pod %s is on node %q, want a kwok node", p.Name, p.Spec.NodeName)
		}
		// Node kwok-node-I gives its pods IPs from its pod CIDR 10.0.I.0/24.
		i := strings.TrimPrefix(p.Spec.NodeName, "kwok-node-")
		if !strings.HasPrefix(p.Status.PodIP, "10.0."+i+".") {
			t.Errorf("pod %s on %s has IP %q, want one in 10.0.%s.0/24", p.Name, p.Spec.NodeName, p.Status.PodIP, i)
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "ReplicaSet" {
			t.Errorf("pod %s owners = %+v, want its ReplicaSet", p.Name, p.OwnerReferences)
		}
	}

	victim := pods[0].Name
	grace := int64(0)
	deleted := time.Now()
	if err := client.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatalf("deleting pod %s: %v", victim, err)
	}
	// The ReplicaSet controller reacts to the deletion at once and kwok
	// makes a pod Ready within seconds; 60 s leaves room for a loaded machine.
	replaceCtx, cancelReplace := context.WithTimeout(ctx, 60*time.Second)
	defer cancelReplace()
	pods, err = WaitPods(replaceCtx, client, ns, "app=sim", func(pods []*corev1.Pod) bool {
		return twoReady(pods) && pods[0].Name != victim && pods[1].Name != victim
	})
	if err != nil {
		t.Fatalf("no replacement for pod %s deleted with grace 0: %v", victim, err)
	}
	t.Logf("pod %s deleted with grace 0; replacement Running and Ready after %v", victim, time.Since(deleted).Round(time.Millisecond))

	_, err = client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "sim"},
		Spec: corev1.ServiceSpec{
			Selector: labels,
			Ports:    []corev1.ServicePort{{Name: "http", Port: 8000, TargetPort: intstr.FromString("http")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating service: %v", err)
	}
	want := []string{pods[0].Status.PodIP, pods[1].Status.PodIP}
	slices.Sort(want)
	eps, err := WaitEndpointSlices(ctx, client, ns, "sim", func(eps []*discoveryv1.EndpointSlice) bool {
		return slices.Equal(ReadyAddresses(eps), want)
	})
	if err != nil {
		t.Fatalf("want ready addresses %v: %v", want, err)
	}
	for _, s := range eps {
		for _, p := range s.Ports {
			if p.Port == nil || *p.Port != 8000 {
				t.Errorf("endpointslice %s port = %v, want 8000 (the pods' named port)", s.Name, p.Port)
			}
		}
	}
}

// TestSecondStartOnARunningControlPlaneDoesNothing: start is idempotent.
func TestSecondStartOnARunningControlPlaneDoesNothing(t *testing.T) {
	c := Start(t)
	before := readPids(t, c.Dir)
	out, err := runScript(t.Context(), shared.script, "start", c.Dir)
	if err != nil {
		t.Fatalf("second start: %v\n%s", err, out)
	}
	if !strings.Contains(out, "already running") {
		t.Errorf("second start said %q, want it to say that the control plane is already running", out)
	}
	if after := readPids(t, c.Dir); !slices.Equal(after, before) {
		t.Errorf("pids after a second start = %v, want them unchanged %v", after, before)
	}
}

// TestControlPlaneStopsWhenItsOwnerExits starts a second control plane whose
// owner is a child process, kills the child and expects every component to
// exit and the certificates and data to go, the logs to stay; then stop
// again is a no-op.
func TestControlPlaneStopsWhenItsOwnerExits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane of its own (about 15 s of two cores)")
	}
	Start(t) // skips or fails here when not built, like every other test
	script := shared.script
	owner := exec.Command("sleep", "3600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = owner.Process.Kill() }() // already killed when all goes well

	dir := t.TempDir()
	t.Setenv("KWOK_NODES", "1")
	if _, err := StartIn(t.Context(), script, dir, owner.Process.Pid); err != nil {
		t.Fatal(err)
	}
	pids := readPids(t, dir)
	if len(pids) != 6 { // etcd, apiserver, controller-manager, scheduler, kwok, the owner's watcher
		t.Fatalf("pid files in %s: %v, want 6", dir, pids)
	}
	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait() // killed: the error says so

	// Each component gets 10 s after SIGTERM before SIGKILL.
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var left []int
		for _, pid := range pids {
			if processLive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("processes %v of the control plane still run 90 s after its owner exited; logs in %s", left, dir)
		case <-tick.C:
		}
	}
	for _, gone := range []string{"pki", "etcd", "kubeconfig", "env"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after stop: %v, want it removed", gone, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver.log")); err != nil {
		t.Errorf("kube-apiserver.log after stop: %v, want it kept", err)
	}
	if err := Stop(t.Context(), script, dir); err != nil {
		t.Errorf("stop of a stopped control plane: %v", err)
	}
	if err := Stop(t.Context(), script, filepath.Join(dir, "missing")); err != nil {
		t.Errorf("stop of a missing directory: %v", err)
	}
}

// TestCheckSaysWhatIsMissingAndHowToBuildIt runs the script's check against
// an empty cache; it needs no control plane built.
func TestCheckSaysWhatIsMissingAndHowToBuildIt(t *testing.T) {
	script, err := FindScript()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	cache := t.TempDir()
	t.Setenv("LLMCHAOS_CACHE", cache)
	err = Check(t.Context(), script)
	var nb *NotBuiltError
	if !errors.As(err, &nb) {
		t.Fatalf("Check with an empty cache = %v, want a *NotBuiltError", err)
	}
	for _, want := range []string{
		filepath.Join(cache, "k8s", "v1.34.4", "bin", "kube-apiserver"),
		filepath.Join(cache, "k8s", "kwok-v0.8.0", "bin", "kwok"),
		"scripts/k8s-controlplane.sh build",
	} {
		if !strings.Contains(nb.Detail, want) {
			t.Errorf("check's explanation lacks %q:\n%s", want, nb.Detail)
		}
	}
}

// readPids returns the pids in dir's pid files, sorted.
func readPids(t *testing.T, dir string) []int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.pid"))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids
}

// processLive reports whether pid runs and is not a zombie (orphans that
// nobody reaps stay zombies on some machines).
func processLive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}
