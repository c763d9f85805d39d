//go:build !cuda

package gpu

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenCUDABalloonWithoutTheBackend(t *testing.T) {
	b, err := OpenCUDABalloon(context.Background(), 0)
	if b != nil || !errors.Is(err, ErrNoCUDABuild) {
		t.Fatalf("OpenCUDABalloon = %v, %v; want ErrNoCUDABuild", b, err)
	}
	if !strings.Contains(err.Error(), "-tags cuda") {
		t.Errorf("error %q does not say how to get the backend", err)
	}
}

// TestDefaultBuildStaysStatic guards the FROM scratch image: the default
// build of llmchaos must not link purego (which makes a binary dynamically
// linked even without cgo) nor go-nvml (which needs cgo).
func TestDefaultBuildStaysStatic(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	cmd := exec.Command(goTool, "list", "-deps", "github.com/llmchaos/llmchaos/cmd/llmchaos")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, bad := range []string{"github.com/ebitengine/purego", "github.com/NVIDIA/go-nvml"} {
		if strings.Contains(string(out), bad) {
			t.Errorf("the default build of llmchaos links %s; keep it behind the cuda / nvml build tags", bad)
		}
	}
	if !strings.Contains(string(out), "github.com/llmchaos/llmchaos/faults/gpu\n") {
		t.Error("llmchaos does not link faults/gpu at all; this guard checks nothing")
	}
}
