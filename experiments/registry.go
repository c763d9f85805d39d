package experiments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"reflect"
	"strings"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/gpu"
	"github.com/llmchaos/llmchaos/faults/network"
	"github.com/llmchaos/llmchaos/faults/replica"
)

// SimEnv is what a target.sim run gives the faults that act on its
// replicas when their params leave the target out (FaultType.FromSim).
type SimEnv struct {
	// StateFile is the simulator supervisor's state file (sim --state-file).
	StateFile string
	// VGPUDir is the replicas' vGPU ledger directory (sim --vgpu-dir).
	VGPUDir string
}

// placeholderSimEnv stands for the paths a run will have, when a spec is
// only validated.
func placeholderSimEnv() SimEnv {
	return SimEnv{StateFile: "RUN_DIR/sim/state.json", VGPUDir: "RUN_DIR/sim/vgpu"}
}

// replicaFaultTypes describes the replica faults of faults/replica.
func replicaFaultTypes() map[string]FaultType {
	return map[string]FaultType{
		replica.TypeKill: replicaType(func(p *replica.KillParams) *replica.TargetParams { return &p.Target },
			func(p replica.KillParams) error { return p.WithDefaults().Validate() }),
		replica.TypeStop: replicaType(func(p *replica.StopParams) *replica.TargetParams { return &p.Target },
			func(p replica.StopParams) error { return p.WithDefaults().Validate() }),
		replica.TypePause: replicaType(func(p *replica.PauseParams) *replica.TargetParams { return &p.Target },
			func(p replica.PauseParams) error { return p.WithDefaults().Validate() }),
		replica.TypeRestart: replicaType(func(p *replica.RestartParams) *replica.TargetParams { return &p.Target },
			func(p replica.RestartParams) error { return p.WithDefaults().Validate() }),
	}
}

// replicaType describes one replica fault type whose params are a P; target
// reaches the params' replica target, which a target.sim run fills with its
// supervisor's state file when the experiment leaves it out.
func replicaType[P any](target func(*P) *replica.TargetParams, check func(P) error) FaultType {
	return FaultType{
		Target:    TargetParams,
		NewParams: func() any { return new(P) },
		Check:     func(p any) error { return check(*p.(*P)) },
		FromSim: func(p any, env SimEnv) {
			t := target(p.(*P))
			*t = t.OrStateFile(env.StateFile)
		},
	}
}

// gpuFaultTypes describes the GPU faults of faults/gpu.
func gpuFaultTypes() map[string]FaultType {
	return map[string]FaultType{
		gpu.TypeMemoryPressure: {
			Target:    TargetParams,
			NewParams: func() any { return &gpu.PressureParams{} },
			Check:     func(p any) error { return p.(*gpu.PressureParams).WithDefaults().Validate() },
			FromSim: func(p any, env SimEnv) {
				q := p.(*gpu.PressureParams)
				if q.VGPUDir == "" && (q.Backend == "" || q.Backend == gpu.BackendVGPU) {
					q.VGPUDir = env.VGPUDir
				}
			},
		},
		gpu.TypeHang: {
			Target:    TargetParams,
			NewParams: func() any { return &gpu.HangParams{} },
			Check:     func(p any) error { return p.(*gpu.HangParams).WithDefaults().Validate() },
			FromSim: func(p any, env SimEnv) {
				q := p.(*gpu.HangParams)
				if q.PID == 0 && q.PIDFile == "" && q.StateFile == "" {
					q.StateFile = env.StateFile
				}
			},
		},
	}
}

// Reverters returns the reverter of every RevertSpec kind a fault or a
// helper of a run may write in its journal: the union of the maps of
// faults (helper processes), faults/network (proxy toxics, nftables
// tables, qdiscs), faults/replica (frozen processes and containers) and
// faults/gpu (balloons). `llmchaos recover` replays a killed run's journal
// with it.
func Reverters() map[string]faults.Reverter {
	m := faults.BuiltinReverters()
	maps.Copy(m, network.ProxyReverters())
	maps.Copy(m, network.KernelReverters())
	maps.Copy(m, replica.Reverters())
	maps.Copy(m, gpu.Reverters())
	return m
}

// buildEnv is what building one fault of a run takes besides its spec.
type buildEnv struct {
	// seed is the fault's own seed, derived from the run's.
	seed uint64
	// proxies are the proxies a TargetProxy fault acts on.
	proxies []*runProxy
	// helper is the llmchaos executable for helper processes ("" → this
	// executable).
	helper string
	// onReplica is told of every replica a replica fault acted on.
	onReplica func(replica.Target)
	// onBalloonExit is told when a GPU balloon exits while it should hold.
	onBalloonExit func(error)
	// log receives helper processes' logs (nil: discarded).
	log io.Writer
}

// faultBuilder builds one fault of an experiment from its decoded params
// (defaults not yet applied: the fault packages' constructors apply them).
type faultBuilder func(env buildEnv, f Fault, params any) (faults.Fault, error)

// faultBuilders returns how to build each fault type of FaultTypes: the
// runner's half of the one explicit map of built-ins.
func faultBuilders() map[string]faultBuilder {
	m := map[string]faultBuilder{}
	for _, t := range network.ProxyFaultTypes() {
		m[t] = buildToxic
	}
	m[network.TypeNetnsLoss] = func(_ buildEnv, f Fault, p any) (faults.Fault, error) {
		return network.NewNetnsLoss(f.Name, *p.(*network.NetnsLossParams))
	}
	m[network.TypeNetnsPartition] = func(_ buildEnv, f Fault, p any) (faults.Fault, error) {
		return network.NewNetnsPartition(f.Name, *p.(*network.NetnsPartitionParams))
	}
	m[network.TypeNetnsBandwidth] = func(_ buildEnv, f Fault, p any) (faults.Fault, error) {
		return network.NewNetnsBandwidth(f.Name, *p.(*network.NetnsBandwidthParams))
	}
	m[network.TypeNetnsDelay] = func(_ buildEnv, f Fault, p any) (faults.Fault, error) {
		return network.NewNetnsDelay(f.Name, *p.(*network.NetnsDelayParams))
	}
	m[replica.TypeKill] = func(env buildEnv, f Fault, p any) (faults.Fault, error) {
		return replica.NewKill(f.Name, *p.(*replica.KillParams), env.rng(), replicaOpts(env)...)
	}
	m[replica.TypeStop] = func(env buildEnv, f Fault, p any) (faults.Fault, error) {
		return replica.NewStop(f.Name, *p.(*replica.StopParams), env.rng(), replicaOpts(env)...)
	}
	m[replica.TypePause] = func(env buildEnv, f Fault, p any) (faults.Fault, error) {
		return replica.NewPause(f.Name, *p.(*replica.PauseParams), env.rng(), replicaOpts(env)...)
	}
	m[replica.TypeRestart] = func(env buildEnv, f Fault, p any) (faults.Fault, error) {
		return replica.NewRestart(f.Name, *p.(*replica.RestartParams), env.rng(), replicaOpts(env)...)
	}
	m[gpu.TypeMemoryPressure] = func(env buildEnv, f Fault, p any) (faults.Fault, error) {
		return gpu.NewMemoryPressure(f.Name, *p.(*gpu.PressureParams), gpu.BalloonOptions{
			Binary: env.helper, Log: env.log, OnExit: env.onBalloonExit,
		})
	}
	m[gpu.TypeHang] = func(_ buildEnv, f Fault, p any) (faults.Fault, error) {
		return gpu.NewHang(f.Name, *p.(*gpu.HangParams))
	}
	return m
}

// rng returns the fault's seeded source of random choices.
func (e buildEnv) rng() *rand.Rand { return rand.New(rand.NewPCG(e.seed, 0x6661756c74)) }

func replicaOpts(env buildEnv) []replica.Option {
	if env.onReplica == nil {
		return nil
	}
	return []replica.Option{replica.OnApplied(env.onReplica)}
}

// buildToxic builds a proxy fault: one toxic in each of the fault's
// proxies, injected together.
func buildToxic(env buildEnv, f Fault, p any) (faults.Fault, error) {
	pp, ok := p.(network.ProxyParams)
	if !ok {
		return nil, fmt.Errorf("fault %q: params are not those of a proxy fault", f.Name)
	}
	if len(env.proxies) == 0 {
		return nil, fmt.Errorf("fault %q (%s): no proxy to act through", f.Name, f.Type)
	}
	all := make(multiFault, 0, len(env.proxies))
	for i, px := range env.proxies {
		t, err := network.NewToxic(f.Name, px.toxics, pp, env.seed+uint64(i))
		if err != nil {
			return nil, err
		}
		all = append(all, t)
	}
	return all, nil
}

// decodeParams decodes a fault's params strictly into the params type of
// its fault type, as Validate does, and fills in what a target.sim run
// provides when sim is not nil.
func decodeParams(i int, f Fault, ft FaultType, sim *SimEnv) (any, error) {
	var iss issues
	params := ft.NewParams()
	dec := newDecoder(&iss)
	dec.decode(index("faults", i)+".params", valueNode(f.Params), reflect.ValueOf(params).Elem())
	if len(iss) > 0 {
		msgs := make([]string, len(iss))
		for j, is := range iss {
			msgs[j] = is.path + ": " + is.msg
		}
		return nil, fmt.Errorf("fault %q: %s", f.Name, strings.Join(msgs, "; "))
	}
	if ft.FromSim != nil && sim != nil {
		ft.FromSim(params, *sim)
	}
	return params, nil
}

// netnsOf returns the network namespace the params of a kernel-level
// fault name, "" for other faults.
func netnsOf(params any) string {
	switch p := params.(type) {
	case *network.NetnsLossParams:
		return p.Netns
	case *network.NetnsPartitionParams:
		return p.Netns
	case *network.NetnsBandwidthParams:
		return p.Netns
	case *network.NetnsDelayParams:
		return p.Netns
	}
	return ""
}

// multiFault injects several faults as one: all of them or none. Its
// Undo reverts them in reverse order and joins their errors.
type multiFault []faults.Fault

var _ faults.Fault = multiFault(nil)

// Inject implements faults.Fault: when one part fails, the parts already
// injected are reverted before it returns.
func (m multiFault) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	undos := make([]faults.Undo, 0, len(m))
	for _, f := range m {
		u, err := f.Inject(ctx, log)
		if err != nil {
			undoCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultRevertTimeout)
			defer cancel()
			return nil, errors.Join(err, joinUndos(undos)(undoCtx))
		}
		undos = append(undos, u)
	}
	return joinUndos(undos), nil
}

// Target describes where the parts act, for the run's record.
func (m multiFault) Target() string {
	parts := make([]string, 0, len(m))
	for _, f := range m {
		if d, ok := f.(interface{ Target() string }); ok {
			parts = append(parts, d.Target())
		}
	}
	return strings.Join(parts, "; ")
}

// joinUndos returns an Undo that runs undos last first and joins their
// errors. Each Undo is idempotent, so the joined one is too.
func joinUndos(undos []faults.Undo) faults.Undo {
	return func(ctx context.Context) error {
		var errs []error
		for i := len(undos) - 1; i >= 0; i-- {
			if err := undos[i](ctx); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
}
