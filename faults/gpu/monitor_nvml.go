//go:build nvml && cgo

package gpu

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlSource reads GPUs through NVML. It exists only after a successful
// nvmlInit, so none of its calls can follow a failed one.
type nvmlSource struct {
	lib  nvml.Interface
	devs []nvmlDevice
}

type nvmlDevice struct {
	index      int
	h          nvml.Device
	name, uuid string
}

var _ source = (*nvmlSource)(nil)

// openSource initialises NVML (library path, or libnvidia-ml.so.1) and
// finds the devices. On a failed init it returns at once, calling nothing
// else of NVML: go-nvml kills the process on any call after a failed init,
// ErrorString included, so the reason is named from the code here.
func openSource(path string) (source, error) {
	var opts []nvml.LibraryOption
	if path != "" {
		opts = append(opts, nvml.WithLibraryPath(path))
	}
	lib := nvml.New(opts...)
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: %s", ErrNoGPU, initFailure(ret, path))
	}
	s := &nvmlSource{lib: lib}
	fail := func(err error) (source, error) {
		lib.Shutdown()
		return nil, err
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fail(fmt.Errorf("%w: NVML device count: %v", ErrNoGPU, ret))
	}
	if n == 0 {
		return fail(fmt.Errorf("%w: NVML found no devices", ErrNoGPU))
	}
	for i := range n {
		h, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return fail(fmt.Errorf("NVML device %d: %v", i, ret))
		}
		d := nvmlDevice{index: i, h: h}
		if name, ret := h.GetName(); ret == nvml.SUCCESS {
			d.name = name
		}
		if uuid, ret := h.GetUUID(); ret == nvml.SUCCESS {
			d.uuid = uuid
		}
		s.devs = append(s.devs, d)
	}
	return s, nil
}

// initFailure says why nvmlInit failed without asking NVML.
func initFailure(ret nvml.Return, path string) string {
	if path == "" {
		path = "libnvidia-ml.so.1"
	}
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return fmt.Sprintf("NVML library %s not found (no NVIDIA driver here)", path)
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return "the NVIDIA kernel driver is not loaded"
	case nvml.ERROR_NO_PERMISSION:
		return "no permission to talk to the NVIDIA driver"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return "NVML and the kernel driver have different versions (reload the driver or reboot)"
	case nvml.ERROR_FUNCTION_NOT_FOUND:
		return fmt.Sprintf("NVML library %s is too old (no nvmlInit_v2)", path)
	case nvml.ERROR_UNKNOWN:
		return "nvmlInit failed for an unknown reason"
	}
	return fmt.Sprintf("nvmlInit failed with NVML return code %d", int32(ret))
}

func (s *nvmlSource) devices() int { return len(s.devs) }

// notAvailable is NVML_VALUE_NOT_AVAILABLE for an unsigned long long.
const notAvailable = math.MaxUint64

func (s *nvmlSource) sample(now time.Time) []Sample {
	out := make([]Sample, 0, len(s.devs))
	for _, d := range s.devs {
		smp := Sample{Time: now, GPU: d.index, Name: d.name, UUID: d.uuid, UtilGPU: -1, UtilMemory: -1}
		var errs []string
		if m, ret := d.h.GetMemoryInfo(); ret == nvml.SUCCESS {
			smp.MemoryUsed, smp.MemoryFree, smp.MemoryTotal = m.Used, m.Free, m.Total
		} else {
			errs = append(errs, "memory: "+ret.Error())
		}
		if u, ret := d.h.GetUtilizationRates(); ret == nvml.SUCCESS {
			smp.UtilGPU, smp.UtilMemory = int(u.Gpu), int(u.Memory)
		} else if ret != nvml.ERROR_NOT_SUPPORTED {
			errs = append(errs, "utilisation: "+ret.Error())
		}
		if ps, ret := d.h.GetComputeRunningProcesses(); ret == nvml.SUCCESS {
			for _, p := range ps {
				used := int64(-1)
				if p.UsedGpuMemory != notAvailable {
					used = int64(p.UsedGpuMemory)
				}
				smp.Processes = append(smp.Processes, ProcessMemory{PID: int(p.Pid), UsedBytes: used})
			}
		} else if ret != nvml.ERROR_NOT_SUPPORTED {
			errs = append(errs, "processes: "+ret.Error())
		}
		smp.Err = strings.Join(errs, "; ")
		out = append(out, smp)
	}
	return out
}

func (s *nvmlSource) close() error {
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return errors.New("NVML shutdown: " + ret.Error())
	}
	return nil
}
