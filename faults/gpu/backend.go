package gpu

import (
	"errors"

	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

// ErrNoGPU says that there is no GPU to act on or watch: no driver, no
// device, or no support for it in this build. Errors that wrap it read
// "no GPU: <reason>".
var ErrNoGPU = errors.New("no GPU")

// ErrNoNVMLBuild says that this binary was built without NVML, so it cannot
// watch GPUs. NVML needs cgo, which the static build leaves out.
var ErrNoNVMLBuild = errors.New("GPU monitor off: built without NVML support (build llmchaos with -tags nvml and cgo on)")

// ErrNoCUDABuild says that this binary was built without the cuda backend.
// Loading libcuda.so.1 makes a binary dynamically linked, even without cgo,
// so the static build (the FROM scratch image) leaves the backend out.
var ErrNoCUDABuild = errors.New("this llmchaos was built without the cuda balloon backend: build it with `-tags cuda` (the binary is then dynamically linked, so it cannot run in the FROM scratch image)")

// CUDABalloon is a balloon on a real GPU: a vgpu.Balloon that also says
// what device it is on and must be closed (which frees its memory and its
// CUDA context).
type CUDABalloon interface {
	vgpu.Balloon
	// Name returns the device's name as the driver reports it.
	Name() string
	// Total returns the device's memory size in bytes.
	Total() int64
	// Close frees everything and destroys the context; it is idempotent.
	Close() error
}
