// Package kubernetes_test checks deploy/kubernetes: that kustomize renders
// it, that the rendered objects apply server-side to a real control plane
// and run there, and that its RBAC grants exactly the API calls llmchaos
// makes.
package kubernetes_test

import (
	"testing"

	"github.com/llmchaos/llmchaos/internal/k8stest"
)

func TestMain(m *testing.M) { k8stest.Main(m) }
