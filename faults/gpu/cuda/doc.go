// Package cuda holds real GPU device memory through the CUDA driver API, for
// the gpu.memory_pressure fault's `cuda` backend. It loads libcuda.so.1 at
// run time through purego (no cgo, no CUDA toolkit at build time) and calls
// cuInit, cuDeviceGet, cuCtxCreate_v2, cuMemAlloc_v2 in chunks (1 GiB, halved
// down to 2 MiB when the driver refuses a chunk), cuMemGetInfo_v2,
// cuMemFree_v2 and cuCtxDestroy_v2. Balloon implements vgpu.Balloon, so the
// gpu-balloon command drives a real GPU exactly as it drives a virtual one.
//
// Where there is no driver, Open fails cleanly with an error that wraps
// ErrNoDriver ("no CUDA driver (libcuda.so.1 not found): ..."); nothing is
// called before the library and every symbol are found.
//
// A CUDA context is current per OS thread, so every call that needs the
// balloon's context runs with the goroutine locked to its thread and the
// context made current first.
//
// Linking this package makes a binary dynamically linked (purego imports
// libdl), even with CGO_ENABLED=0; the static `FROM scratch` build of
// llmchaos therefore leaves it out, and only a build with `-tags cuda`
// imports it (see faults/gpu's backend files).
package cuda
