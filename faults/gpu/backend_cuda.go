//go:build cuda

package gpu

import (
	"context"
	"errors"
	"fmt"

	"github.com/llmchaos/llmchaos/faults/gpu/cuda"
)

var _ CUDABalloon = (*cuda.Balloon)(nil)

// OpenCUDABalloon opens a balloon on CUDA device index (with
// CUDA_DEVICE_ORDER=PCI_BUS_ID in the environment, the index NVML shows)
// through the CUDA driver. Without a driver or a device the error wraps
// ErrNoGPU: "no GPU: no CUDA driver (libcuda.so.1 not found): ...".
func OpenCUDABalloon(ctx context.Context, index int) (CUDABalloon, error) {
	b, err := cuda.Open(ctx, cuda.Options{Device: index})
	if errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoDevice) {
		return nil, fmt.Errorf("%w: %w", ErrNoGPU, err)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}
