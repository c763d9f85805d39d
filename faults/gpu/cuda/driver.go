package cuda

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/ebitengine/purego"
)

// DefaultLibrary is the CUDA driver library Open loads by default; the
// dynamic loader finds it through its usual search path (LD_LIBRARY_PATH,
// ld.so.cache), as the NVIDIA container runtime arranges.
const DefaultLibrary = "libcuda.so.1"

// ErrNoDriver says that the CUDA driver library could not be loaded: the
// machine has no NVIDIA driver (or the binary cannot load libraries at all).
var ErrNoDriver = errors.New("no CUDA driver")

// ErrNoDevice says that the driver loaded but found no CUDA device.
var ErrNoDevice = errors.New("no CUDA device")

// CUresult codes the package acts on (cuda.h).
const (
	codeSuccess     = 0
	codeOutOfMemory = 2
	codeNoDevice    = 100
)

// Error is a CUDA driver call that returned something other than
// CUDA_SUCCESS.
type Error struct {
	// Call is the driver function, e.g. "cuMemAlloc_v2".
	Call string
	// Code is the CUresult.
	Code int
	// Name is the CUresult's name from cuGetErrorName, e.g.
	// "CUDA_ERROR_OUT_OF_MEMORY"; empty when the driver does not know it.
	Name string
}

// Error names the call and the result.
func (e *Error) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("%s: CUresult %d", e.Call, e.Code)
	}
	return fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
}

// OutOfMemory reports whether the driver refused for lack of device memory.
func (e *Error) OutOfMemory() bool { return e.Code == codeOutOfMemory }

// driver holds the entry points of one loaded CUDA driver library. The
// field types follow cuda.h on 64-bit Linux: CUresult and CUdevice are C
// ints, CUcontext a pointer, CUdeviceptr an unsigned long long, size_t a
// uintptr.
type driver struct {
	lib string

	cuInit           func(flags uint32) int32
	cuDeviceGetCount func(count *int32) int32
	cuDeviceGet      func(dev *int32, ordinal int32) int32
	cuDeviceGetName  func(name *byte, n int32, dev int32) int32
	cuDeviceTotalMem func(bytes *uintptr, dev int32) int32
	cuCtxCreate      func(ctx *uintptr, flags uint32, dev int32) int32
	cuCtxDestroy     func(ctx uintptr) int32
	cuCtxSetCurrent  func(ctx uintptr) int32
	cuMemAlloc       func(ptr *uint64, size uintptr) int32
	cuMemFree        func(ptr uint64) int32
	cuMemGetInfo     func(free, total *uintptr) int32
	cuGetErrorName   func(code int32, name **byte) int32 // nil if the driver lacks it
}

// loadDriver loads lib and resolves every entry point the balloon uses. It
// calls none of them. A missing library wraps ErrNoDriver; a missing symbol
// (a driver too old) is reported by name.
func loadDriver(lib string) (*driver, error) {
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("%w (%s not found): %v", ErrNoDriver, lib, err)
	}
	d := &driver{lib: lib}
	syms := []struct {
		name     string
		fptr     any
		optional bool
	}{
		{"cuInit", &d.cuInit, false},
		{"cuDeviceGetCount", &d.cuDeviceGetCount, false},
		{"cuDeviceGet", &d.cuDeviceGet, false},
		{"cuDeviceGetName", &d.cuDeviceGetName, false},
		{"cuDeviceTotalMem_v2", &d.cuDeviceTotalMem, false},
		{"cuCtxCreate_v2", &d.cuCtxCreate, false},
		{"cuCtxDestroy_v2", &d.cuCtxDestroy, false},
		{"cuCtxSetCurrent", &d.cuCtxSetCurrent, false},
		{"cuMemAlloc_v2", &d.cuMemAlloc, false},
		{"cuMemFree_v2", &d.cuMemFree, false},
		{"cuMemGetInfo_v2", &d.cuMemGetInfo, false},
		{"cuGetErrorName", &d.cuGetErrorName, true},
	}
	for _, s := range syms {
		addr, err := purego.Dlsym(h, s.name)
		if err != nil || addr == 0 {
			if s.optional {
				continue
			}
			// The library is useless without it; unloading is safe since
			// nothing of it ran beyond its initialisers.
			_ = purego.Dlclose(h)
			return nil, fmt.Errorf("CUDA driver %s lacks %s (a driver older than CUDA 4.0, or not a CUDA driver): %v", lib, s.name, err)
		}
		purego.RegisterFunc(s.fptr, addr)
	}
	return d, nil
}

// check turns a CUresult into nil or an *Error naming call.
func (d *driver) check(call string, code int32) error {
	if code == codeSuccess {
		return nil
	}
	e := &Error{Call: call, Code: int(code)}
	if d.cuGetErrorName != nil {
		var p *byte
		if d.cuGetErrorName(code, &p) == codeSuccess && p != nil {
			e.Name = cString(p, 128)
		}
	}
	return e
}

// cString copies the NUL-terminated C string at p, reading at most limit bytes.
func cString(p *byte, limit int) string {
	n := 0
	for n < limit && *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}
