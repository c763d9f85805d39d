//go:build cuda

package gpu

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestOpenCUDABalloonWithoutDriver(t *testing.T) {
	b, err := OpenCUDABalloon(context.Background(), 0)
	if err == nil {
		b.Close()
		t.Skip("this machine has a CUDA GPU")
	}
	if !errors.Is(err, ErrNoGPU) {
		t.Fatalf("OpenCUDABalloon error = %v, want one wrapping ErrNoGPU", err)
	}
	if want := "no GPU: no CUDA driver (libcuda.so.1 not found)"; !strings.HasPrefix(err.Error(), want) && !strings.Contains(err.Error(), "no CUDA device") {
		t.Errorf("error %q, want it to start with %q", err, want)
	}
}
