package chaosmesh_test

import (
	"testing"

	"github.com/llmchaos/llmchaos/internal/k8stest"
)

func TestMain(m *testing.M) { k8stest.Main(m) }
