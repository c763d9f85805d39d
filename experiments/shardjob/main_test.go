package shardjob_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/llmchaos/llmchaos/internal/k8stest"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		if err := crashingRun(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	k8stest.Main(m)
}
