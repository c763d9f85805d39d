package faults

import (
	"encoding"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
)

// Lifetime says how a fault behaves in time: an instantaneous fault acts
// once and leaves its target to be brought back by its owner (a kill); a
// sustained one holds until its revert removes it (latency).
type Lifetime string

// Lifetimes of fault types.
const (
	Instantaneous Lifetime = "instantaneous"
	Sustained     Lifetime = "sustained"
)

// What a fault type acts on (Type.Target).
const (
	// TargetProxy types act through a fault proxy in front of the target;
	// an experiment's fault target (proxy, endpoints, count) says which.
	TargetProxy = "proxy"
	// TargetParams types say in their params where they act (a network
	// namespace, replicas, a GPU).
	TargetParams = "params"
)

// SimEnv is what a run against the built-in simulator gives the faults that
// act on its replicas when their params leave the target out (Type.FromSim).
type SimEnv struct {
	// StateFile is the simulator supervisor's state file (sim --state-file).
	StateFile string
	// VGPUDir is the replicas' vGPU ledger directory (sim --vgpu-dir).
	VGPUDir string
	// Owner is the process whose end takes the simulator with it (the
	// runner that started it, its supervisor's parent-death signal and
	// journal entry see to that); zero when unknown. A revert that awaits a
	// replica of this simulator has nothing to await once Owner is gone.
	Owner ProcessSpec
}

// KubernetesEnv is what a run against a Kubernetes target (target.kubernetes)
// gives the faults that act on its pods when their params leave the target
// out (Type.FromKubernetes): where the pods are and how to reach the API
// server.
type KubernetesEnv struct {
	// Namespace is the pods' namespace ("" : the kubeconfig context's).
	Namespace string
	// Selector is the label selector of the serving pods (app=vllm).
	Selector string
	// Kubeconfig and Context say which cluster ("" : in a pod its service
	// account, else $KUBECONFIG or ~/.kube/config and its current context).
	Kubeconfig string
	Context    string
}

// BuildEnv is what building one fault takes besides its params: what the
// runner owns (proxies, the helper executable, its event callbacks). The
// families read it; they never import the runner.
type BuildEnv struct {
	// Name is the experiment's name of the fault.
	Name string
	// Seed is the fault's own seed, derived from the run's.
	Seed uint64
	// RunID identifies the run (its directory's name): faults that create
	// objects in a cluster label them with it (llmchaos.io/run), so that
	// what a run left is found by label.
	RunID string
	// Proxy is the fault proxy a TargetProxy type acts through (a
	// network.Toxics): its Build is called once per proxy the fault covers.
	Proxy any
	// Helper is the llmchaos executable for helper processes ("" → this
	// executable).
	Helper string
	// Log receives helper processes' logs (nil: discarded).
	Log io.Writer
	// OnApplied, when set, is told of every target the fault acted on (a
	// replica), described for the run's record. It may be called from
	// several goroutines at once.
	OnApplied func(target string)
	// OnHelperExit, when set, is told when a helper that holds the fault
	// (a GPU balloon) exits while it should hold.
	OnHelperExit func(error)
	// Sim is the simulator the run started (nil without one): faults on its
	// replicas record its Owner.
	Sim *SimEnv
}

// Rand returns the fault's seeded source of random choices.
func (e BuildEnv) Rand() *rand.Rand { return rand.New(rand.NewPCG(e.Seed, 0x6661756c74)) }

// Type describes one fault type: everything an experiment, the runner, the
// CLI's reference and the JSON Schema need to know about it. Each family
// (faults/network, faults/replica, faults/gpu) exports one explicit list of
// them (Types); nothing registers itself.
type Type struct {
	// Name is the type as written in an experiment's `type:` field.
	Name string
	// Family is the package that defines it: network, replica, gpu,
	// gpupod or chaosmesh.
	Family string
	// Summary is one line saying what the fault does.
	Summary string
	// Lifetime is Instantaneous (a kill) or Sustained (latency).
	Lifetime Lifetime
	// Target is TargetProxy or TargetParams.
	Target string
	// L7 is set for proxy types decided per HTTP request, which need a
	// proxy in HTTP mode.
	L7 bool
	// Example is the params of a typical fault of this type, in YAML (a
	// mapping, without the `params:` key).
	Example string
	// NewParams returns an empty params value (a pointer to the type's
	// params struct) for a fault's params to be decoded into, strictly:
	// its yaml (else json) tags are the keys, and its doc, unit, default
	// and required tags document them (Params).
	NewParams func() any
	// Check validates decoded params as the fault will run them, that is
	// resolved: what the target gives and the type's defaults (Defaults)
	// filled in, which the experiment's validation does on a copy before it
	// calls Check. It changes nothing and applies no default. It returns every
	// problem keyed by its field under the params (latency,
	// select.value; "" for the params as a whole), which the experiment
	// file reports at faults[i].params.KEY and a console under its own
	// names: no front end reads the key out of a message.
	Check func(params any) field.Problems
	// FromSim, when set, fills in (in place) what params leave out and a
	// run against the built-in simulator provides.
	FromSim func(params any, env SimEnv)
	// FromKubernetes, when set, fills in (in place) what params leave out
	// and a run against a Kubernetes target provides (the pods' namespace
	// and selector, the cluster).
	FromKubernetes func(params any, env KubernetesEnv)
	// Defaults fills in (in place) the type's defaults, the values its
	// params' default tags document, once what the target gives is filled
	// in (FromSim, FromKubernetes). Every type has one. The experiment's
	// resolution applies it, so that what the runner describes (a dry
	// run's targets and params, the replicas it watches) is what the fault
	// runs, and nothing downstream applies a default again.
	Defaults func(params any)
	// Build returns the fault from resolved params (Defaults applied). The
	// families whose exported constructors are also called with params
	// built in Go by hand (network.NewToxic and the netns faults,
	// gpu.NewMemoryPressure, replica's) apply the defaults there, which
	// changes nothing in resolved params; the others (gpupod, chaosmesh)
	// are built from resolved params only and apply none.
	Build func(env BuildEnv, params any) (Fault, error)
	// Reverters returns the reverter of every RevertSpec kind the type's
	// faults may write in the journal (a new map on every call).
	Reverters func() map[string]Reverter
}

// DefaultsBy returns a Type.Defaults for params of type *P whose
// WithDefaults returns a copy with the defaults filled in.
func DefaultsBy[P interface{ WithDefaults() P }]() func(params any) {
	return func(params any) {
		p := params.(*P)
		*p = (*p).WithDefaults()
	}
}

// ParamProblems returns the problems of a params check's error (a
// Validate method's, or a constructor's that validates): the field
// problems it holds, and any other error as a problem of the params as a
// whole.
func ParamProblems(err error) field.Problems {
	ps, rest := field.Of(err)
	for _, e := range rest {
		ps = append(ps, field.Errorf("", "%w", e))
	}
	return ps
}

// Param documents one key of a fault type's params.
type Param struct {
	// Name is the key, dotted for keys of nested mappings (target.driver).
	Name string
	// Type is the value's kind: string, integer, number, boolean,
	// duration, list of KIND, map, object (whose keys follow, dotted).
	Type string
	// Default is the value used when the key is left out ("" for none).
	Default string
	// Unit is the unit of a number ("" for none).
	Unit string
	// Doc says what the key does.
	Doc string
	// Required is set when the key must be given.
	Required bool
}

// Params documents the keys of t's params, from the tags of its params
// struct: the yaml (else json) key; doc, unit and default; required unless
// the tag says omitempty or `required:"false"` (a key that the runner may
// fill in). Inline structs are flattened; nested structs give dotted keys.
func (t Type) Params() []Param {
	if t.NewParams == nil {
		return nil
	}
	rt := reflect.TypeOf(t.NewParams())
	for rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	var out []Param
	paramsOf(rt, "", &out)
	return out
}

var (
	durationType    = reflect.TypeFor[time.Duration]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// ParamKey returns the key of struct field sf in params (its yaml tag, else
// its json tag, else its name), whether it is inlined into its parent, and
// whether its tag says omitempty.
func ParamKey(sf reflect.StructField) (key string, inline, omitempty bool) {
	tag, ok := sf.Tag.Lookup("yaml")
	if !ok {
		tag = sf.Tag.Get("json")
	}
	name, opts, _ := strings.Cut(tag, ",")
	optList := strings.Split(opts, ",")
	inline = slices.Contains(optList, "inline") || (sf.Anonymous && name == "")
	omitempty = slices.Contains(optList, "omitempty") || slices.Contains(optList, "omitzero")
	if name == "" {
		name = sf.Name
	}
	return name, inline, omitempty
}

func paramsOf(rt reflect.Type, prefix string, out *[]Param) {
	for i := range rt.NumField() {
		sf := rt.Field(i)
		if !sf.IsExported() {
			continue
		}
		key, inline, omitempty := ParamKey(sf)
		if key == "-" {
			continue
		}
		ft := sf.Type
		if inline {
			paramsOf(ft, prefix, out)
			continue
		}
		pointer := ft.Kind() == reflect.Pointer
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		p := Param{
			Name:     prefix + key,
			Type:     paramType(ft),
			Default:  sf.Tag.Get("default"),
			Unit:     sf.Tag.Get("unit"),
			Doc:      sf.Tag.Get("doc"),
			Required: !omitempty && !pointer && sf.Tag.Get("required") != "false",
		}
		*out = append(*out, p)
		if p.Type == "object" {
			paramsOf(ft, p.Name+".", out)
		}
	}
}

// paramType names the kind of values of type t.
func paramType(t reflect.Type) string {
	if t == durationType {
		return "duration"
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "string"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "list of " + paramType(t.Elem())
	case reflect.Map:
		return "map"
	case reflect.Struct:
		return "object"
	}
	return t.Kind().String()
}
