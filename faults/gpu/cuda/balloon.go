package cuda

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

// Allocation sizes. The driver books device memory in 2 MiB pages for
// allocations this large, so sizes are kept multiples of that.
const (
	// DefaultChunk is the largest single allocation a Balloon asks for.
	DefaultChunk = vgpu.GiB
	// DefaultMinChunk is the smallest: when the driver refuses a chunk the
	// Balloon halves it, down to this size, before it gives up.
	DefaultMinChunk = 2 * vgpu.MiB
)

// Options configure Open.
type Options struct {
	// Library is the driver library to load (default DefaultLibrary).
	Library string
	// Device is the CUDA device ordinal. CUDA numbers devices fastest
	// first unless CUDA_DEVICE_ORDER=PCI_BUS_ID is set in the environment,
	// which makes the ordinals match NVML's and nvidia-smi's indexes; the
	// gpu.memory_pressure fault sets it for its balloon process.
	Device int
	// Chunk and MinChunk bound the size of one allocation (defaults
	// DefaultChunk and DefaultMinChunk).
	Chunk, MinChunk int64
}

// Balloon holds device memory on one GPU through a CUDA context of its own.
// Its memory is freed by Release, by Close, and by the driver when the
// process exits, however it exits. A Balloon is safe for concurrent use,
// though its calls run one at a time.
type Balloon struct {
	drv      *driver
	ordinal  int
	dev      int32
	name     string
	total    int64
	chunk    int64
	minChunk int64

	mu     sync.Mutex
	ctx    uintptr // CUcontext; 0 once destroyed
	allocs []allocation
}

type allocation struct {
	ptr  uint64
	size int64
}

var _ vgpu.Balloon = (*Balloon)(nil)

// Open loads the driver, initialises it and creates a context on device
// o.Device. Without a driver the error wraps ErrNoDriver; without a device
// it wraps ErrNoDevice. ctx is checked before the driver is
// called; a driver call itself cannot be interrupted.
func Open(ctx context.Context, o Options) (*Balloon, error) {
	if o.Library == "" {
		o.Library = DefaultLibrary
	}
	if o.Chunk <= 0 {
		o.Chunk = DefaultChunk
	}
	if o.MinChunk <= 0 {
		o.MinChunk = DefaultMinChunk
	}
	if o.MinChunk > o.Chunk {
		return nil, fmt.Errorf("cuda: min chunk %d is larger than chunk %d", o.MinChunk, o.Chunk)
	}
	if o.Device < 0 {
		return nil, fmt.Errorf("cuda: device %d: must be 0 or more", o.Device)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	d, err := loadDriver(o.Library)
	if err != nil {
		return nil, err
	}
	b := &Balloon{drv: d, ordinal: o.Device, chunk: o.Chunk, minChunk: o.MinChunk}
	// The context becomes current on this thread; keep the goroutine on it
	// until the context is made, so nothing else runs here meanwhile.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		var ce *Error
		if errors.As(err, &ce) && ce.Code == codeNoDevice {
			return nil, fmt.Errorf("cuda: %w (driver %s loaded): %w", ErrNoDevice, d.lib, err)
		}
		return nil, fmt.Errorf("cuda: initialise driver %s: %w", d.lib, err)
	}
	var count int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&count)); err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	if o.Device >= int(count) {
		return nil, fmt.Errorf("cuda: device %d: this machine has %d CUDA device(s) (check CUDA_VISIBLE_DEVICES)", o.Device, count)
	}
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&b.dev, int32(o.Device))); err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", o.Device, err)
	}
	var name [256]byte
	if d.cuDeviceGetName(&name[0], int32(len(name)), b.dev) == codeSuccess {
		b.name = cString(&name[0], len(name))
	}
	var total uintptr
	if err := d.check("cuDeviceTotalMem_v2", d.cuDeviceTotalMem(&total, b.dev)); err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", o.Device, err)
	}
	b.total = int64(total)
	if err := d.check("cuCtxCreate_v2", d.cuCtxCreate(&b.ctx, 0, b.dev)); err != nil {
		return nil, fmt.Errorf("cuda: device %d: create context: %w", o.Device, err)
	}
	return b, nil
}

// Device returns the CUDA ordinal of the balloon's device.
func (b *Balloon) Device() int { return b.ordinal }

// Name returns the device's name as the driver reports it.
func (b *Balloon) Name() string { return b.name }

// Total returns the device's memory size in bytes.
func (b *Balloon) Total() int64 { return b.total }

// Held returns the bytes the balloon holds (what it asked for; the driver
// may book slightly more).
func (b *Balloon) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n int64
	for _, a := range b.allocs {
		n += a.size
	}
	return n
}

// withContext runs fn on a locked OS thread with the balloon's context
// current, under b.mu.
func (b *Balloon) withContext(fn func() error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx == 0 {
		return errors.New("cuda: balloon is closed")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := b.drv.check("cuCtxSetCurrent", b.drv.cuCtxSetCurrent(b.ctx)); err != nil {
		return fmt.Errorf("cuda: device %d: %w", b.ordinal, err)
	}
	return fn()
}

// memInfo returns the device's free and total bytes. The context is current.
func (b *Balloon) memInfo() (free, total int64, err error) {
	var f, t uintptr
	if err := b.drv.check("cuMemGetInfo_v2", b.drv.cuMemGetInfo(&f, &t)); err != nil {
		return 0, 0, fmt.Errorf("cuda: device %d: %w", b.ordinal, err)
	}
	return int64(f), int64(t), nil
}

// alloc allocates size bytes. The context is current.
func (b *Balloon) alloc(size int64) (allocation, error) {
	var p uint64
	if err := b.drv.check("cuMemAlloc_v2", b.drv.cuMemAlloc(&p, uintptr(size))); err != nil {
		return allocation{}, err
	}
	return allocation{ptr: p, size: size}, nil
}

// freeAll frees as and returns the joined errors. The context is current.
func (b *Balloon) freeAll(as []allocation) error {
	var errs []error
	for _, a := range as {
		if err := b.drv.check("cuMemFree_v2", b.drv.cuMemFree(a.ptr)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cuda: device %d: free: %w", b.ordinal, err)
	}
	return nil
}

// MemoryError says that the device had too little memory free for a Hold
// or HoldAllBut. It wraps the *vgpu.ReserveError with the numbers, which is
// what vgpu.KeepFree and the gpu-balloon command look for.
type MemoryError struct {
	*vgpu.ReserveError
}

// Error names the device, the need and what the driver reported free.
func (e *MemoryError) Error() string {
	return fmt.Sprintf("cuda device %d: cannot hold %s: need %s, the driver reports %s free of %s",
		e.GPU, vgpu.FormatSize(e.Need), vgpu.FormatSize(e.Need), vgpu.FormatSize(e.Free), vgpu.FormatSize(e.Total))
}

// Unwrap returns the *vgpu.ReserveError.
func (e *MemoryError) Unwrap() error { return e.ReserveError }

func (b *Balloon) memoryError(need, free, total int64) error {
	return &MemoryError{&vgpu.ReserveError{GPU: b.ordinal, What: "balloon", Need: need, Free: free, Total: total}}
}

// outOfMemory reports whether err is the driver refusing for lack of memory.
func outOfMemory(err error) bool {
	var ce *Error
	return errors.As(err, &ce) && ce.OutOfMemory()
}

// Hold allocates n more bytes, in chunks, or nothing: when the device runs
// out first it frees what this call took and returns a *MemoryError.
func (b *Balloon) Hold(ctx context.Context, n int64) error {
	if n <= 0 {
		return fmt.Errorf("cuda balloon on device %d: size %d: must be positive", b.ordinal, n)
	}
	return b.withContext(func() error {
		free, total, err := b.memInfo()
		if err != nil {
			return err
		}
		var took []allocation
		undo := func(err error) error { return errors.Join(err, b.freeAll(took)) }
		chunk := b.chunk
		for left := n; left > 0; {
			if err := ctx.Err(); err != nil {
				return undo(fmt.Errorf("cuda balloon: %w", err))
			}
			size := min(chunk, left)
			a, err := b.alloc(size)
			switch {
			case outOfMemory(err) && size > b.minChunk:
				chunk = max(b.minChunk, size/2)
				continue
			case outOfMemory(err):
				return undo(b.memoryError(n, free, total))
			case err != nil:
				return undo(fmt.Errorf("cuda: device %d: %w", b.ordinal, err))
			}
			took = append(took, a)
			left -= size
		}
		b.allocs = append(b.allocs, took...)
		return nil
	})
}

// HoldAllBut allocates everything the driver reports free except leave
// bytes (to within MinChunk), re-reading the free memory after every chunk,
// and returns how much it took. When no more than leave (plus MinChunk) is
// free it takes nothing and returns a *MemoryError (a *vgpu.ReserveError
// underneath), which is what vgpu.KeepFree expects when there is nothing
// new to take.
func (b *Balloon) HoldAllBut(ctx context.Context, leave int64) (int64, error) {
	if leave < 0 {
		return 0, fmt.Errorf("cuda balloon on device %d: leave %d bytes free: must not be negative", b.ordinal, leave)
	}
	var sum int64
	err := b.withContext(func() error {
		var took []allocation
		undo := func(err error) error { return errors.Join(err, b.freeAll(took)) }
		chunk := b.chunk
		var free, total int64
		// Every round allocates at least MinChunk or halves the chunk, so
		// this bound is never reached unless the driver misreports.
	rounds:
		for n := b.total/b.minChunk + 64; n > 0; n-- {
			if err := ctx.Err(); err != nil {
				return undo(fmt.Errorf("cuda balloon: %w", err))
			}
			var err error
			free, total, err = b.memInfo()
			if err != nil {
				return undo(err)
			}
			want := (free - leave) / DefaultMinChunk * DefaultMinChunk
			if want < b.minChunk {
				break rounds
			}
			size := min(chunk, want)
			a, err := b.alloc(size)
			switch {
			case outOfMemory(err) && size > b.minChunk:
				chunk = max(b.minChunk, size/2)
				continue
			case outOfMemory(err):
				break rounds // the smallest chunk is refused: that is all there is
			case err != nil:
				return undo(fmt.Errorf("cuda: device %d: %w", b.ordinal, err))
			}
			took = append(took, a)
			sum += size
		}
		if sum == 0 {
			return b.memoryError(leave+b.minChunk, free, total)
		}
		b.allocs = append(b.allocs, took...)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return sum, nil
}

// Free returns the bytes the driver reports free on the device now.
func (b *Balloon) Free(context.Context) (int64, error) {
	var free int64
	err := b.withContext(func() error {
		var err error
		free, _, err = b.memInfo()
		return err
	})
	return free, err
}

// Release frees everything the balloon holds; the context stays, so the
// balloon can hold again. It is idempotent, and a no-op after Close.
func (b *Balloon) Release() error {
	err := b.withContext(func() error {
		err := b.freeAll(b.allocs)
		b.allocs = nil
		return err
	})
	if err != nil && b.closed() {
		return nil
	}
	return err
}

func (b *Balloon) closed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ctx == 0
}

// Close frees the balloon's memory and destroys its context. It is
// idempotent.
func (b *Balloon) Close() error {
	if b.closed() {
		return nil
	}
	rerr := b.Release()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx == 0 {
		return rerr
	}
	// cuCtxDestroy works from any thread; it also frees what is left.
	err := b.drv.check("cuCtxDestroy_v2", b.drv.cuCtxDestroy(b.ctx))
	b.ctx = 0
	b.allocs = nil
	if err != nil {
		return errors.Join(rerr, fmt.Errorf("cuda: device %d: %w", b.ordinal, err))
	}
	return rerr
}
