package spec

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/chaosmesh"
	"github.com/llmchaos/llmchaos/faults/gpu"
	"github.com/llmchaos/llmchaos/faults/gpupod"
	"github.com/llmchaos/llmchaos/faults/network"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/internal/field"
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
// replica, gpu, gpupod, chaosmesh), each family's in the order of its list.
func FaultTypeList() []FaultType {
	return slices.Concat(network.Types(), replica.Types(), gpu.Types(), gpupod.Types(), chaosmesh.Types())
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
// wrappers only name what failed again), nested joins flattened, or the
// error itself. A field.Problem is one problem, whatever it wraps.
func problemMessages(err error) []string {
	for e := err; e != nil; {
		if isJoin(e) {
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
	if !ok || !isJoin(e) {
		return []string{oneLine(e.Error())}
	}
	var out []string
	for _, x := range j.Unwrap() {
		out = append(out, joinLeaves(x)...)
	}
	return out
}

// isJoin reports whether e joins several errors (errors.Join, a
// field.Problems), not one problem that wraps its causes (a field.Problem).
func isJoin(e error) bool {
	if _, one := e.(field.Problem); one {
		return false
	}
	_, ok := e.(interface{ Unwrap() []error })
	return ok
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

// SimEnv is what a target.sim run gives the faults that act on its
// replicas when their params leave the target out (FaultType.FromSim).
type SimEnv = faults.SimEnv

// placeholderSimEnv stands for the paths a run will have, when a spec is
// only validated.
func placeholderSimEnv() SimEnv {
	return SimEnv{StateFile: "RUN_DIR/sim/state.json", VGPUDir: "RUN_DIR/sim/vgpu"}
}

// Reverters returns the reverter of every RevertSpec kind a fault or a
// helper of a run may write in its journal: faults' own (helper processes),
// the shard Job of workload.shards (shardjob.KindJob) and those of every
// fault type (proxy toxics, nftables tables, qdiscs, frozen processes and
// containers, balloons). `llmchaos recover` and the guard replay a killed
// run's journal with it.
func Reverters() map[string]faults.Reverter {
	m := faults.BuiltinReverters()
	maps.Copy(m, shardjob.Reverters())
	for _, t := range FaultTypeList() {
		if t.Reverters != nil {
			maps.Copy(m, t.Reverters())
		}
	}
	return m
}

// DecodeParams decodes a fault's params strictly into the params type of
// its fault type, as Validate does, and fills in what a target.sim run
// provides when sim is not nil. i is the fault's index in the spec's
// faults, for the key paths of its errors.
func DecodeParams(i int, f Fault, ft FaultType, sim *SimEnv) (any, error) {
	return DecodeParamsIn(i, f, ft, TargetEnv{Sim: sim})
}

// TargetEnv is what the experiment's target gives the faults that leave
// their own target out: a target.sim run's files, or a target.kubernetes's
// pods. Both nil: nothing.
type TargetEnv struct {
	Sim        *SimEnv
	Kubernetes *faults.KubernetesEnv
}

// EnvOf returns what s's target gives the faults, with sim the paths of
// its simulator (nil before the run starts it).
func (s *Spec) EnvOf(sim *SimEnv) TargetEnv {
	env := TargetEnv{Sim: sim}
	if t := s.Target.Kubernetes; t != nil {
		k := t.Env()
		env.Kubernetes = &k
	}
	return env
}

// DecodeParamsIn is DecodeParams with what the target gives (FromSim,
// FromKubernetes) filled in from env, then the type's defaults: a fault
// injected by hand resolved as a timeline's is. Its error is the
// field.Problems of the params, each keyed by its field
// (faults[i].params.KEY).
func DecodeParamsIn(i int, f Fault, ft FaultType, env TargetEnv) (any, error) {
	var iss issues
	params := ft.NewParams()
	countDecode()
	dec := newDecoder(&iss)
	dec.decode(index("faults", i)+".params", valueNode(f.Params), reflect.ValueOf(params).Elem())
	if len(iss) > 0 {
		ps := make(field.Problems, len(iss))
		for j, is := range iss {
			ps[j] = problemAt("", 0, 0, is.path, is.msg, is.warn)
		}
		return nil, ps
	}
	completeParams(params, ft, env)
	return params, nil
}
