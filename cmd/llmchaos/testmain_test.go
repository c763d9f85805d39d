package main

import (
	"testing"

	"github.com/llmchaos/llmchaos/internal/k8stest"
)

// TestMain stops the Kubernetes control plane that the Kubernetes tests
// start (one for the test binary).
func TestMain(m *testing.M) { k8stest.Main(m) }
