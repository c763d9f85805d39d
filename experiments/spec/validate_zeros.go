package spec

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/llmchaos/llmchaos/simcontract/simconfig"
)

// An explicit zero in a file is never replaced by a default: the spec's
// types cannot tell "replicas: 0" from a key left out, so the decoder
// records where the file writes a 0 (decoder.zeros) and explicitZeros
// reports each one at a key whose 0 a default would replace, or that
// would make the key pointless (a fault that never fires). Keys whose 0
// means what it says (a stage of 0s, a ramp from 0, max_in_flight: 0 for
// no cap) are not listed.

// zeroRule says why an explicit 0 at the keys its pattern matches is an
// error.
type zeroRule struct {
	// pattern matches a key path whose list indexes are written [] .
	pattern string
	msg     func() string
}

// replacedBy is the message for a 0 a default would replace.
func replacedBy(def any, want string) func() string {
	return func() string {
		return fmt.Sprintf("0 would be replaced by the default (%v): %s, or leave the key out for the default", def, want)
	}
}

// zeroRules lists the keys an explicit 0 is an error at.
func zeroRules() []zeroRule {
	d := simconfig.Default()
	return []zeroRule{
		{"target.sim.replicas", replacedBy(DefaultSimReplicas, "want 1 to 64")},
		{"target.sim.ttft", replacedBy(d.TTFT, "want more than 0")},
		{"target.sim.itl", replacedBy(d.ITL, "want more than 0")},
		{"target.sim.max_num_seqs", replacedBy(d.MaxNumSeqs, "want 1 or more")},
		{"target.sim.max_waiting", replacedBy(d.MaxWaiting, "want 1 or more")},
		{"target.sim.max_model_len", replacedBy(d.MaxModelLen, "want 1 or more")},
		{"target.sim.mean_output_tokens", replacedBy(d.MeanOutputTokens, "want 1 or more")},
		{"target.sim.gpu_memory_utilization", replacedBy(d.GPUUtilization, "want more than 0 and at most 1")},
		{"target.sim.startup_time", replacedBy(DefaultSimStartupTime, "write 1ms for a replica that is ready at once")},
		{"target.sim.restart_delay", replacedBy(DefaultSimRestartDelay, "write 1ms for an immediate restart")},
		{"target.kubernetes.port", func() string { return "0: want a port, 1 to 65535, or leave the key out" }},
		{"workload.rate", func() string {
			return "0 requests per second sends nothing (and would be replaced by the preset's rate): want more than 0"
		}},
		{"workload.duration", func() string { return "0s: want more than 0, or leave the key out" }},
		{"workload.requests", func() string { return "0 requests sends nothing: want 1 or more, or leave the key out" }},
		{"workload.concurrency", func() string { return "0 users send nothing: want 1 or more, or leave the key out" }},
		{"workload.burstiness", replacedBy(1, "want more than 0 (1 is Poisson)")},
		{"workload.prefix_share", replacedBy(1, "want more than 0 and at most 1 (leave out prefix_count for no shared prefixes)")},
		{"workload.cancel_share", replacedBy(1, "want more than 0 and at most 1 (leave out cancel_after for no cancellations)")},
		{"steady_state[].http.expect_status", replacedBy(DefaultProbeStatus, "want an HTTP status (100 to 599)")},
		{"steady_state[].http.timeout", replacedBy(Duration(DefaultProbeTimeout), "want more than 0")},
		{"stop_conditions[].interval", replacedBy(Duration(DefaultPromQLInterval), "want more than 0")},
		{"recovery.window", replacedBy(Duration(DefaultRecoveryWindow), "want more than 0")},
		{"recovery.hold", replacedBy(Duration(DefaultRecoveryHold), "want more than 0")},
		{"recovery.latency_band", replacedBy(DefaultRecoveryLatencyBand, "want 1 or more")},
		{"faults[].params.probability", func() string {
			return "0: a fault that never acts tests nothing: want more than 0 and at most 1, or leave the key out to act on every request"
		}},
		{"probes.rate", replacedBy(DefaultProbeRate, "want more than 0")},
		{"probes.max_tokens", replacedBy(DefaultProbeMaxTokens, "want 1 or more")},
		{"faults[].params.status", replacedBy(503, "want an error status (400 to 599)")},
	}
}

var listIndexRE = regexp.MustCompile(`\[[0-9]+\]`)

// explicitZeros reports the explicit zeros that zeroRules refuse, those of
// the file (v.zeros) and those of fault params (decoded by v.dec).
func (v *validator) explicitZeros() {
	var paths []string
	for _, zs := range []map[string]bool{v.zeros, v.dec.zeros} {
		for p, zero := range zs {
			if zero {
				paths = append(paths, p)
			}
		}
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	rules := zeroRules()
	for _, p := range paths {
		key := listIndexRE.ReplaceAllString(p, "[]")
		for _, r := range rules {
			if r.pattern == key {
				v.iss.add(p, "%s", r.msg())
				break
			}
		}
	}
}
