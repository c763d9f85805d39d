package sim

import (
	"fmt"
	"sync"
)

// Memory is the GPU memory a replica runs on (a virtual GPU ledger or an
// in-process one). Implementations must be safe for concurrent use; the
// engine calls Free from its own goroutine at most every 100 ms of engine
// time, and once more right before it declares an out-of-memory death.
type Memory interface {
	// Reserve holds n bytes until Release. It returns a typed error naming
	// the bytes needed, free and total (for example *ReserveError) when fewer
	// than n bytes are free; nothing is reserved then.
	Reserve(n int64, what string) error
	// Free returns the bytes free on the device now; other processes'
	// reservations count against it.
	Free() (int64, error)
	// Total returns the device's size in bytes.
	Total() int64
	// Release drops every reservation this replica holds.
	Release() error
}

// ReserveError says that a reservation did not fit on the device.
type ReserveError struct {
	What  string // what the bytes were for ("weights", "kv-cache", ...)
	Need  int64  // bytes asked for
	Free  int64  // bytes free at the time
	Total int64  // device size
}

// Error names the numbers, like a CUDA allocation failure does.
func (e *ReserveError) Error() string {
	return fmt.Sprintf("reserve %s: need %s but only %s free of %s",
		e.What, FormatBytes(e.Need), FormatBytes(e.Free), FormatBytes(e.Total))
}

// localMemory is an in-process device that nobody else uses.
type localMemory struct {
	mu       sync.Mutex
	total    int64
	reserved int64
}

var _ Memory = (*localMemory)(nil)

// NewLocalMemory returns an in-process device of total bytes with nobody
// else on it: Free is total minus what Reserve holds.
func NewLocalMemory(total int64) Memory { return &localMemory{total: total} }

// Reserve holds n bytes or fails with *ReserveError.
func (m *localMemory) Reserve(n int64, what string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n < 0 {
		return fmt.Errorf("reserve %s: negative size %d", what, n)
	}
	if free := m.total - m.reserved; n > free {
		return &ReserveError{What: what, Need: n, Free: free, Total: m.total}
	}
	m.reserved += n
	return nil
}

// Free returns total minus the bytes held.
func (m *localMemory) Free() (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total - m.reserved, nil
}

// Total returns the device size.
func (m *localMemory) Total() int64 { return m.total }

// Release drops every reservation.
func (m *localMemory) Release() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reserved = 0
	return nil
}

// StartError says the replica could not start: too little free GPU memory
// for its weights and KV cache pool, or a device too small for the model.
type StartError struct {
	Need   int64  // bytes the replica must reserve (weights + KV pool)
	Free   int64  // bytes free on the device at start
	Total  int64  // device size
	Reason string // set when the device cannot fit the model whatever is free
	Err    error  // the reservation failure, if one happened
}

// Error names the numbers, as vLLM's start-up check does.
func (e *StartError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("cannot start: %s (device total %s)", e.Reason, FormatBytes(e.Total))
	}
	msg := fmt.Sprintf("cannot start: need %s of free GPU memory for weights and KV cache, but only %s of %s is free",
		FormatBytes(e.Need), FormatBytes(e.Free), FormatBytes(e.Total))
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the reservation failure.
func (e *StartError) Unwrap() error { return e.Err }

// OOMError is the engine's death by out-of-memory: a step needed more
// transient activation memory than the device had free (or the admin API
// asked for a crash, which dies the same way).
type OOMError struct {
	Need     int64 // bytes the step tried to allocate
	Free     int64 // bytes free on the device at that moment
	Total    int64 // device size
	Tokens   int   // tokens batched in the step
	Injected bool  // the admin API's crash, not real memory pressure
}

// Error reads like PyTorch's CUDA out-of-memory error and names the numbers.
func (e *OOMError) Error() string {
	msg := fmt.Sprintf("CUDA out of memory: tried to allocate %s for %d batched tokens; GPU has a total capacity of %s of which %s is free",
		FormatBytes(e.Need), e.Tokens, FormatBytes(e.Total), FormatBytes(e.Free))
	if e.Injected {
		msg += " (crash injected through the admin API)"
	}
	return msg
}

// FormatBytes writes n as GiB or MiB with two decimals followed by the exact
// byte count, so that messages are readable and still carry the numbers.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30 || n <= -(1<<30):
		return fmt.Sprintf("%.2f GiB (%d bytes)", float64(n)/(1<<30), n)
	case n >= 1<<20 || n <= -(1<<20):
		return fmt.Sprintf("%.2f MiB (%d bytes)", float64(n)/(1<<20), n)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
