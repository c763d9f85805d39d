package vgpu

import (
	"fmt"
	"sort"
	"strings"
)

// Holder is one live reservation on a device, for diagnostics.
type Holder struct {
	PID   int    // process holding the memory
	Bytes int64  // size of the reservation
	What  string // what the memory is for ("weights", "kv cache", "balloon", ...)
}

// ReserveError says that a reservation was refused because too little memory
// was free, with the numbers a person needs to see why.
type ReserveError struct {
	GPU     int      // device index
	What    string   // what the refused reservation was for
	Need    int64    // bytes asked for
	Free    int64    // bytes free when it was refused
	Total   int64    // device capacity
	Holders []Holder // live reservations at that moment
}

// Error names the need, what was free, the capacity and who holds the rest.
func (e *ReserveError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "vgpu %d: cannot reserve %s", e.GPU, FormatSize(e.Need))
	if e.What != "" {
		fmt.Fprintf(&b, " for %s", e.What)
	}
	fmt.Fprintf(&b, ": need %s, free %s of %s", FormatSize(e.Need), FormatSize(e.Free), FormatSize(e.Total))
	if h := SummarizeHolders(e.Holders); h != "" {
		b.WriteString("; held by ")
		b.WriteString(h)
	}
	return b.String()
}

// SummarizeHolders renders holders grouped by pid, largest first, for
// messages: "pid 42 (120.0 GiB: kv cache 104.0 GiB, weights 16.0 GiB), pid 77 (...)".
func SummarizeHolders(hs []Holder) string {
	type group struct {
		pid   int
		total int64
		parts []string
	}
	byPID := map[int]*group{}
	var order []*group
	for _, h := range hs {
		g, ok := byPID[h.PID]
		if !ok {
			g = &group{pid: h.PID}
			byPID[h.PID] = g
			order = append(order, g)
		}
		g.total += h.Bytes
		what := h.What
		if what == "" {
			what = "unnamed"
		}
		g.parts = append(g.parts, what+" "+FormatSize(h.Bytes))
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].total > order[j].total })
	out := make([]string, 0, len(order))
	for _, g := range order {
		out = append(out, fmt.Sprintf("pid %d (%s: %s)", g.pid, FormatSize(g.total), strings.Join(g.parts, ", ")))
	}
	return strings.Join(out, ", ")
}

// CapacityError says that a device was opened with a capacity other than the
// one recorded by its first opener.
type CapacityError struct {
	Dir      string // the device's directory
	GPU      int    // device index
	Recorded int64  // capacity on record
	Asked    int64  // capacity the opener asked for
}

// Error names both capacities and what to do.
func (e *CapacityError) Error() string {
	return fmt.Sprintf("vgpu %d in %s has %s (%d bytes) on record, but %s (%d bytes) was asked for: use the same --gpu-memory for every process sharing a vGPU directory, or a fresh --vgpu-dir",
		e.GPU, e.Dir, FormatSize(e.Recorded), e.Recorded, FormatSize(e.Asked), e.Asked)
}
