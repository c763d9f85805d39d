// Package gpu holds the GPU fault family and the GPU monitor.
//
// # gpu.memory_pressure
//
// MemoryPressure takes GPU memory away from the service under test: Inject
// starts a balloon child process (`llmchaos gpu-balloon`) that holds `gib`
// GiB, or everything free but `leave_free_gib` GiB, on GPU `gpu`, and
// waits for the line in which the child says it holds; Undo terminates the
// child (SIGTERM, then SIGKILL after a grace period), which frees the memory
// as any dying process's device memory is freed. The memory lives in a
// child, not in the runner, so that it is freed however the runner ends:
// the child watches its parent and exits when it dies.
//
// Backends: `vgpu` holds a reservation in the simulator's virtual GPU
// ledger (simcontract/vgpu, directory `vgpu_dir`); `cuda` holds real device memory
// through the CUDA driver (faults/gpu/cuda, in builds with `-tags cuda`).
//
// With `leave_free_gib` the balloon grows by default: it keeps taking memory
// that others free, every 50 ms. A replica that dies of OOM frees its
// weights and KV cache; without growing, that memory would be free again
// at once, the supervisor's restart would succeed while the fault is still
// "on", and the fault would no longer mean "only N GiB free". Growing keeps
// the promise of the parameter, as a co-tenant grabbing freed memory does,
// so restarts fail until the fault is reverted and OOM recovery can be
// measured from the release. `grow: false` turns it off.
//
// # Crash safety of the balloon
//
// Inject records two revert specs. First, before anything starts, a
// KindBalloonToken spec carrying a random token that the child gets in its
// argv (`--fault-token=TOKEN`); its reverter scans /proc for processes with
// that exact argument and ends them. Then, once the child is started, the
// usual faults.KindProcess spec with its pid and start time. A runner that
// dies at any point is therefore covered: before the first spec nothing
// ran; between the two the token finds the child (its argv is set at exec,
// before it reserves anything); after the second either spec ends it. Apart
// from the journal, the child exits by itself when its parent dies, and it
// is told its parent's pid (`--parent-pid`), so that a child whose parent
// died before it could start watching refuses to hold anything.
//
// # gpu.hang
//
// Hang freezes the serving process and Undo resumes it: what a wedged GPU
// looks like from outside — connections are accepted, nothing answers.
// NewHang names one process (a pid, a pid file, or a replica of a
// simulator supervisor's state file) and freezes it with
// replica.PauseProcess (SIGSTOP through a pidfd after a start-time check,
// journalled as replica.KindSignalCont); NewHangVia acts through another
// fault instead, replica.pause with its target selection among them.
//
// # GPU monitor
//
// Monitor reads every GPU through NVML every 500 ms (memory used, free and
// total, utilisation, and the memory of each compute process) and hands each
// Sample to a callback. NVML needs cgo, so it is built only with `-tags
// nvml` (and cgo on); without it, and on a machine without an NVIDIA driver,
// OpenMonitor says why once and returns a Monitor that does nothing. After
// a failed nvmlInit no NVML function is ever called again: with go-nvml
// that would kill the process.
package gpu
