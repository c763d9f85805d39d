package experiments

import (
	"slices"
	"strings"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/gpu"
	"github.com/llmchaos/llmchaos/faults/network"
	"github.com/llmchaos/llmchaos/faults/replica"
)

// FaultType describes one fault type an experiment may name: what it acts
// on, how its params decode, validate and document themselves, and how the
// runner builds it. The families define them (faults.Type).
type FaultType = faults.Type

// FaultTypes returns every fault type an experiment may name, by type
// name: the merge of the explicit lists of the fault families
// (network.Types, replica.Types, gpu.Types; no init() registration).
// Their params are those of faults/network, faults/replica and faults/gpu;
// with a target.sim, replica and GPU faults may leave their target out
// (FromSim: the simulator's replicas and vGPUs).
func FaultTypes() map[string]FaultType {
	types := map[string]FaultType{}
	for _, t := range FaultTypeList() {
		types[t.Name] = t
	}
	return types
}

// FaultTypeList returns every fault type, family by family (network,
// replica, gpu), each family's in the order of its list.
func FaultTypeList() []FaultType {
	return slices.Concat(network.Types(), replica.Types(), gpu.Types())
}

// faultTypeNames returns the names of FaultTypes, sorted.
func faultTypeNames(types map[string]FaultType) []string {
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// problemMessages splits a validation error into one message per problem:
// the errors of the first errors.Join found down its chain of wrappers (the
// wrappers only name the fault again), nested joins flattened, or the error
// itself.
func problemMessages(err error) []string {
	for e := err; e != nil; {
		if _, ok := e.(interface{ Unwrap() []error }); ok {
			return joinLeaves(e)
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return []string{oneLine(err.Error())}
}

// joinLeaves returns the messages of the errors joined in e, joins inside
// it flattened.
func joinLeaves(e error) []string {
	j, ok := e.(interface{ Unwrap() []error })
	if !ok {
		return []string{oneLine(e.Error())}
	}
	var out []string
	for _, x := range j.Unwrap() {
		out = append(out, joinLeaves(x)...)
	}
	return out
}

// oneLine joins the lines of a multi-line message with "; ".
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}
