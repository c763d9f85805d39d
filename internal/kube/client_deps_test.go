package kube_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBinaryCompilesOnlyTheAPIGroupsItUses: llmchaos's dependencies hold
// the API types of the groups Clientset reaches and none of client-go's
// generated clientset (kubernetes, its typed clients and apply
// configurations, every group Kubernetes serves), which once made up a
// fifth of the first build's CPU time (docs/development.md, Build time).
// A package that imports k8s.io/client-go/kubernetes again fails it.
func TestBinaryCompilesOnlyTheAPIGroupsItUses(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/llmchaos/llmchaos/cmd/llmchaos").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := []string{"k8s.io/api/apps/v1", "k8s.io/api/batch/v1", "k8s.io/api/core/v1", "k8s.io/api/discovery/v1"}
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case strings.HasPrefix(pkg, "k8s.io/api/") && !slices.Contains(allowed, pkg),
			pkg == "k8s.io/client-go/kubernetes" || strings.HasPrefix(pkg, "k8s.io/client-go/kubernetes/"),
			strings.HasPrefix(pkg, "k8s.io/client-go/applyconfigurations/"),
			pkg == "k8s.io/client-go/discovery":
			t.Errorf("cmd/llmchaos depends on %s (go list -deps); reach the API through kube.Clientset", pkg)
		}
	}
}
