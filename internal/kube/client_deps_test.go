package kube_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryCompilesNoKubernetesLibrary: llmchaos reaches the Kubernetes
// API through its own client (internal/kube and its packages: API types
// with only the fields it uses, a JSON REST client, an informer, a dynamic
// client), not through k8s.io/client-go, k8s.io/api and apimachinery,
// which once made up a fifth of the first build's CPU time
// (docs/development.md, Build time). A package that imports any of them,
// or sigs.k8s.io, into the binary again fails it; tests may still use
// them to set up clusters.
func TestBinaryCompilesNoKubernetesLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/llmchaos/llmchaos/cmd/llmchaos").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "k8s.io/") || strings.HasPrefix(pkg, "sigs.k8s.io/") {
			t.Errorf("cmd/llmchaos depends on %s (go list -deps); reach the API through internal/kube", pkg)
		}
	}
}
