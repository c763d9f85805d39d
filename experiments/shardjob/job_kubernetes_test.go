package shardjob_test

import (
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

// Shards that follow a Kubernetes target's pods read the API: their pods
// mount their service account's token; others do not.
func TestJobMountsTheTokenOfShardsThatFollowPods(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		token bool
	}{
		{[]string{"--target", "http://vllm:8000/v1"}, false},
		{[]string{"--kubernetes-selector", "app=vllm", "--kubernetes-port", "8000"}, true},
		{[]string{"--kubernetes-service=vllm"}, true},
	} {
		cfg := shardjob.Config{Namespace: "llm", Image: "llmchaos:dev", Shards: 2, ServiceAccount: shardjob.DefaultPodServiceAccount,
			LoadArgs: append(tt.args, "--rate", "4", "--duration", "1m", "--seed", "1")}
		if cfg.FollowsPods() != tt.token {
			t.Errorf("%q: FollowsPods = %v, want %v", tt.args, cfg.FollowsPods(), tt.token)
		}
		spec := cfg.Job().Spec.Template.Spec
		if m := spec.AutomountServiceAccountToken; m == nil || *m != tt.token {
			t.Errorf("%q: automountServiceAccountToken %v, want %v", tt.args, m, tt.token)
		}
		if spec.ServiceAccountName != shardjob.DefaultPodServiceAccount {
			t.Errorf("%q: service account %q", tt.args, spec.ServiceAccountName)
		}
	}
}

// CheckServiceAccount: a missing account is an error saying what to do
// (the Job would never get its pods); an existing one is not.
func TestCheckServiceAccount(t *testing.T) {
	c := k8stest.Start(t)
	ns := c.Namespace(t)
	client := c.Client(t)
	err := shardjob.CheckServiceAccount(t.Context(), client, ns, shardjob.DefaultPodServiceAccount)
	if err == nil || !strings.Contains(err.Error(), "service account "+ns+"/"+shardjob.DefaultPodServiceAccount+" of the shard pods does not exist") || !strings.Contains(err.Error(), "deploy/kubernetes") {
		t.Errorf("missing account: %v, want an error naming it and deploy/kubernetes", err)
	}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: shardjob.DefaultPodServiceAccount}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := shardjob.CheckServiceAccount(t.Context(), client, ns, shardjob.DefaultPodServiceAccount); err != nil {
		t.Errorf("existing account: %v", err)
	}
}
