package workload

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/internal/field"
)

// Shard is one part of a load split over several processes or machines
// (llmchaos load --shard INDEX/COUNT, a Kubernetes Indexed Job's pods):
// every shard is given the whole load's settings and seed and sends its
// own part of it, so that the shards together send the single-process
// load.
//
// An open-loop schedule is split round-robin: every shard draws the whole
// schedule (arrival times and sessions, from the seed, exactly as one
// process does) and keeps arrival k when k mod Count == Index. Round-robin
// rather than contiguous blocks keeps each shard's load a Count-times
// thinner copy of the whole, spread over the whole run (a ramp or stages
// ramp on every shard at once), and needs no knowledge of the schedule's
// length. A closed loop is split by virtual user: shard Index runs the
// users u with u mod Count == Index (⌊C/Count⌋ users, one more for the first
// C mod Count shards), each with the seed stream and ramp-up offset it has
// in one process. Caps and counts that are not per-arrival (--max-in-flight,
// a closed loop's --requests) are split the same way (see Split).
//
// The zero Shard is the whole load (as is any Count ≤ 1).
type Shard struct {
	Index int // from 0
	Count int // number of shards; 0 or 1: the whole load
}

// ParseShard reads the --shard flag: "INDEX/COUNT" with 0 ≤ INDEX < COUNT,
// e.g. "2/8" (a Kubernetes Indexed Job passes its pod's
// JOB_COMPLETION_INDEX as INDEX). An INDEX that is still a variable
// reference ("$JOB_COMPLETION_INDEX", "$(JOB_COMPLETION_INDEX)") gets an
// error that says it was not expanded.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want INDEX/COUNT with INDEX from 0, e.g. 0/4", s)
	}
	is, ns = strings.TrimSpace(is), strings.TrimSpace(ns)
	if strings.HasPrefix(is, "$") || strings.HasPrefix(ns, "$") {
		return Shard{}, fmt.Errorf("shard %q: %s is an unexpanded variable: run the command through a shell (sh -c) or, in a Kubernetes container's args, write $(JOB_COMPLETION_INDEX) with the variable in the container's env", s, unexpandedPart(is, ns))
	}
	n, err := strconv.Atoi(ns)
	if err != nil || n < 1 {
		return Shard{}, fmt.Errorf("shard %q: count %q: want a whole number ≥ 1", s, ns)
	}
	i, err := strconv.Atoi(is)
	if err != nil || i < 0 {
		return Shard{}, fmt.Errorf("shard %q: index %q: want a whole number from 0", s, is)
	}
	if i >= n {
		return Shard{}, fmt.Errorf("shard %q: index %d is not below the count %d: shards are numbered 0 to %d", s, i, n, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

func unexpandedPart(is, ns string) string {
	if strings.HasPrefix(is, "$") {
		return is
	}
	return ns
}

// String returns s in the syntax ParseShard reads ("0/1" for the whole load).
func (s Shard) String() string { return strconv.Itoa(s.Index) + "/" + strconv.Itoa(s.count()) }

// Whole reports whether s is the whole load (no split).
func (s Shard) Whole() bool { return s.count() == 1 }

func (s Shard) count() int { return max(s.Count, 1) }

// Validate reports an index outside [0, Count).
func (s Shard) Validate() error {
	if s.Count < 0 || s.Index < 0 || (s.Index >= s.count()) {
		return fmt.Errorf("shard %d/%d: want 0 ≤ index < count", s.Index, s.Count)
	}
	return nil
}

// Keeps reports whether item k of the whole load (an open-loop arrival, a
// closed loop's virtual user), counted from 0, is this shard's.
func (s Shard) Keeps(k uint64) bool { return k%uint64(s.count()) == uint64(s.Index) }

// Split returns this shard's part of a whole-load amount n split as evenly
// as whole numbers allow: ⌊n/Count⌋, plus one for the first n mod Count
// shards. The parts of all shards add up to n.
func (s Shard) Split(n int) int {
	c := s.count()
	part := n / c
	if s.Index < n%c {
		part++
	}
	return part
}

// Global returns the number, in the whole load, of this shard's local item
// j (counted from 0): j·Count + Index. Shards number their requests this way
// so that their numbers never collide; for an open-loop schedule of
// single-turn sessions it is the request's position in the whole schedule.
func (s Shard) Global(j uint64) uint64 { return j*uint64(s.count()) + uint64(s.Index) }

// CheckSplit reports the settings a load cannot be split over s.Count
// shards with: a closed loop with fewer virtual users than shards, a
// closed loop's --requests below the count, a --max-in-flight below it
// (a shard would get none). c must be valid.
func (s Shard) CheckSplit(c ArrivalConfig) error {
	if s.Whole() {
		return nil
	}
	var ps field.Problems
	n := s.count()
	if c.Mode() == ModeClosed {
		if c.Concurrency < n {
			ps.Add(FieldConcurrency, "%s %d is split over %d shards: each needs at least one virtual user", FieldConcurrency, c.Concurrency, n)
		}
		if c.Requests > 0 && c.Requests < n {
			ps.Add(FieldRequests, "%s %d of a closed loop is split over %d shards: each needs at least one", FieldRequests, c.Requests, n)
		}
	}
	if c.MaxInFlight > 0 && c.MaxInFlight < n {
		ps.Add(FieldMaxInFlight, "%s %d is split over %d shards: each needs at least one slot", FieldMaxInFlight, c.MaxInFlight, n)
	}
	return ps.Err()
}
