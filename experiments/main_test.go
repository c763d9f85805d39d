package experiments

import (
	"testing"

	"github.com/llmchaos/llmchaos/internal/k8stest"
)

// TestMain stops the Kubernetes control plane the Kubernetes target's tests
// start (once for the test binary).
func TestMain(m *testing.M) { k8stest.Main(m) }
