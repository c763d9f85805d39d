package replica

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/internal/kube"
)

// Fault type names, as written in an experiment file's `type:` field.
const (
	TypeKill    = "replica.kill"
	TypeStop    = "replica.stop"
	TypePause   = "replica.pause"
	TypeRestart = "replica.restart"
)

// Driver names, the `target.driver` field.
const (
	// DriverProcess acts on local processes through signals.
	DriverProcess = "process"
	// DriverDocker acts on containers through the Docker Engine API.
	DriverDocker = "docker"
	// DriverKubernetes acts on pods through the Kubernetes API.
	DriverKubernetes = "kubernetes"
)

// What a process driver's cmdline pattern is matched against (the
// target's match field).
const (
	// MatchExe (the default) matches the executable's name: the base name
	// of argv[0], or the kernel's name of the process (comm, which for a
	// script is the script's name). A restart loop such as
	// `bash -c 'while true; do llama-server ...; done'` is named bash, so
	// a pattern for the server never picks its supervisor.
	MatchExe = "exe"
	// MatchCmdline matches the whole command line, arguments joined by
	// spaces, for processes that only their arguments tell apart.
	MatchCmdline = "cmdline"
)

// OptInLabel is the label (with the value "true") a container must carry
// for the docker driver to act on it, and a pod (or its namespace) for the
// kubernetes driver.
const (
	OptInLabel      = kube.LabelTarget
	OptInLabelValue = "true"
)

// Errors the drivers wrap (compare with errors.Is).
var (
	// ErrNotOptedIn: a container the target matches does not carry
	// OptInLabel=true, or a pod that matches carries it neither itself nor
	// on its namespace.
	ErrNotOptedIn = errors.New("target has not opted in")
	// ErrPIDReused: the pid of a target now belongs to another process
	// (its start time differs), so it is not signalled.
	ErrPIDReused = errors.New("pid now belongs to another process")
	// ErrGone: the target's process exited before it could be acted on.
	ErrGone = errors.New("process is gone")
	// ErrOwnProcess: a target is llmchaos's own process or one of its
	// ancestors (a command-line pattern too broad, a wrong pid file).
	ErrOwnProcess = errors.New("target is llmchaos's own process or an ancestor of it")
)

// Target is one replica a driver can act on.
type Target struct {
	// ID names the replica in events and the run's record: "replica-0" for
	// a supervisor's replica 0, "pid-1234" for a process found by pid file
	// or command line, the container's name for a container.
	ID string
	// Up says whether the replica serves now: a supervisor replica in state
	// serving, a live process that is not stopped, a running container
	// that is not paused (nor unhealthy).
	Up bool
	// PID and StartTime name a process across pid reuse (start time in
	// clock ticks after boot, field 22 of /proc/PID/stat); PID is 0 for a
	// supervisor replica that has no process now, and for containers.
	PID       int
	StartTime uint64
	// Index is the supervisor's replica index, -1 for other targets.
	Index int
	// Container is the container's full id (docker driver).
	Container string
	// Pod names a pod (kubernetes driver): its namespace, name, uid and
	// the controller that owns it.
	Pod *PodRef
	// Detail says more for people: "pid 1234, port 8001, serving".
	Detail string
}

// String returns the ID and the detail.
func (t Target) String() string {
	if t.Detail == "" {
		return t.ID
	}
	return t.ID + " (" + t.Detail + ")"
}

// ActionKind is what a fault does to each target.
type ActionKind string

// Action kinds.
const (
	ActionKill    ActionKind = "kill"
	ActionStop    ActionKind = "stop"
	ActionPause   ActionKind = "pause"
	ActionRestart ActionKind = "restart"
)

// Kill methods (KillParams.Via).
const (
	// ViaProcess signals the replica's process itself, as a crash or the
	// kernel's OOM killer would: an orchestrator sees a failure and applies
	// its restart policy. For a container it signals the container's main
	// process from the host.
	ViaProcess = "process"
	// ViaEngine asks the container engine to kill the container (docker
	// kill). Docker counts that as a deliberate stop: its restart policy
	// does not start the container again.
	ViaEngine = "engine"
)

// Action is one thing to do to a target, with its parameters resolved.
type Action struct {
	Kind ActionKind
	// Signal is the signal of a kill (by name, "SIGKILL").
	Signal string
	// Via is ViaProcess or ViaEngine (kill).
	Via string
	// Image is the llmchaos image of a kill's signal pod (kubernetes
	// driver, via process; "": $LLMCHAOS_IMAGE).
	Image string
	// Grace is how long stop and restart wait after SIGTERM before SIGKILL.
	Grace time.Duration
	// Timeout bounds how long restart waits for the replica to be started
	// again (process driver).
	Timeout time.Duration
	// Owner, when set, is the process the replica dies with (see OwnedBy;
	// process driver).
	Owner *ProcRef
}

// Driver finds replicas and acts on them. Implementations are safe for
// concurrent use: a fault applies its action to the targets it picked at
// the same time.
type Driver interface {
	// Targets lists every replica the driver's target matches, up or not,
	// in a stable order.
	Targets(ctx context.Context) ([]Target, error)
	// Apply does a to t. Before a change it records in log how to revert
	// it (or, for a change that cannot be reverted, what was done). The
	// returned Undo is idempotent and treats a vanished target as reverted.
	Apply(ctx context.Context, log faults.RevertLog, t Target, a Action) (faults.Undo, error)
}

// Watcher reports what replicas do (exit, restart, become healthy) while a
// run goes on. Watch blocks until ctx ends (then returns nil) or the source
// of events fails; it calls ready once, when it is in place (events after
// that moment are not missed), and emit for each event, from one goroutine,
// in order.
type Watcher interface {
	Watch(ctx context.Context, ready func(), emit func(Event)) error
}

// TargetParams say which replicas a fault acts on: a driver and, for it, a
// source of targets.
//
//	target: {driver: process, state_file: /run/llmchaos/sim-state.json}
//	target: {driver: process, cmdline: '^llama-server$'}
//	target: {driver: process, cmdline: 'vllm serve .* --port 80\d\d', match: cmdline}
//	target: {driver: docker, labels: {app: vllm}}
//	target: {driver: kubernetes, namespace: llm, selector: app=vllm}
//
// The process driver takes exactly one of state_file, pid_file and cmdline;
// the docker driver takes labels, containers or both; the kubernetes driver
// a selector (and a namespace, kubeconfig and context). A runner whose
// target is the built-in simulator fills state_file when the experiment
// leaves the target out; one whose target is target.kubernetes fills the
// kubernetes driver's fields from it (OrKubernetes).
type TargetParams struct {
	// Driver is process (default), docker or kubernetes.
	Driver string `json:"driver,omitempty" yaml:"driver,omitempty" doc:"process, docker or kubernetes" default:"process"`
	// StateFile is the simulator supervisor's state file (`llmchaos sim
	// --replicas N --state-file F`): every replica in it is a target, up
	// while it is serving.
	StateFile string `json:"state_file,omitempty" yaml:"state_file,omitempty" doc:"simulator supervisor state file (sim --state-file): every replica in it"`
	// PIDFile holds the pid of the target (one per line for several).
	PIDFile string `json:"pid_file,omitempty" yaml:"pid_file,omitempty" doc:"file holding the target pid (one per line for several), rewritten by the supervisor on each restart"`
	// Cmdline is a regular expression (RE2) matched against every
	// process's executable name (the base name of argv[0], or its comm),
	// or, with Match cmdline, against its whole command line (arguments
	// joined by spaces). A pattern that matches llmchaos's own process or
	// an ancestor of it is refused.
	Cmdline string `json:"cmdline,omitempty" yaml:"cmdline,omitempty" doc:"RE2 pattern matched against each process's executable name (or its whole command line with match: cmdline)"`
	// Match is what Cmdline is matched against: exe (default) or cmdline.
	Match string `json:"match,omitempty" yaml:"match,omitempty" doc:"what cmdline is matched against: exe (default: argv[0] base name or comm) or cmdline"`
	// Labels select containers by label (all must match). A matching
	// container without OptInLabel=true is refused, not skipped.
	Labels map[string]string `json:"labels,omitempty" yaml:"labels,omitempty" doc:"select containers by label (docker driver; each needs the label llmchaos.io/target=true)"`
	// Containers name containers (names or ids); each must exist and carry
	// OptInLabel=true.
	Containers []string `json:"containers,omitempty" yaml:"containers,omitempty" doc:"container names or ids (docker driver; each needs the opt-in label)"`
	// Namespace is the pods' namespace (kubernetes driver; "" : the
	// kubeconfig context's, in a pod its own, else default).
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty" doc:"namespace of the pods (kubernetes driver; default: the kubeconfig context's)"`
	// Selector is a label selector of pods (kubernetes driver). A matching
	// pod that carries OptInLabel=true neither itself nor on its namespace
	// is refused, not skipped.
	Selector string `json:"selector,omitempty" yaml:"selector,omitempty" doc:"label selector of the pods, e.g. app=vllm (kubernetes driver; each pod, or its namespace, needs the label llmchaos.io/target=true)"`
	// Kubeconfig and Context say which cluster (kubernetes driver; "" : in
	// a pod its service account, else $KUBECONFIG or ~/.kube/config and
	// its current context).
	Kubeconfig string `json:"kubeconfig,omitempty" yaml:"kubeconfig,omitempty" doc:"kubeconfig file (kubernetes driver; default: in a pod its service account, else $KUBECONFIG or ~/.kube/config)"`
	Context    string `json:"context,omitempty" yaml:"context,omitempty" doc:"kubeconfig context (kubernetes driver; default: the current one)"`
}

// WithDefaults returns t with its defaults filled in: driver process, and
// match exe for a cmdline pattern.
func (t TargetParams) WithDefaults() TargetParams {
	if t.Driver == "" {
		t.Driver = DriverProcess
	}
	if t.Cmdline != "" && t.Match == "" {
		t.Match = MatchExe
	}
	t.Labels = maps.Clone(t.Labels)
	t.Containers = slices.Clone(t.Containers)
	return t
}

// OrKubernetes returns t completed from the Kubernetes target of the run:
// a target left out entirely becomes the kubernetes driver on env's pods,
// and a kubernetes target takes env's namespace, selector, kubeconfig and
// context for those it leaves out. Any other target is returned as is.
func (t TargetParams) OrKubernetes(env faults.KubernetesEnv) TargetParams {
	empty := t.Driver == "" && t.StateFile == "" && t.PIDFile == "" && t.Cmdline == "" &&
		len(t.Labels) == 0 && len(t.Containers) == 0 && t.Selector == "" && t.Namespace == ""
	if !empty && t.Driver != DriverKubernetes {
		return t
	}
	t.Driver = DriverKubernetes
	if t.Selector == "" {
		t.Selector = env.Selector
		if t.Namespace == "" {
			t.Namespace = env.Namespace
		}
	}
	if t.Kubeconfig == "" && t.Context == "" {
		t.Kubeconfig, t.Context = env.Kubeconfig, env.Context
	}
	return t
}

// OrStateFile returns t with StateFile set to path when t names no target at
// all (the experiment left it out). A runner whose target is the built-in
// simulator calls it, with its supervisor's state file, before it validates
// and builds the fault; any other runner leaves an empty target to fail
// validation.
func (t TargetParams) OrStateFile(path string) TargetParams {
	if (t.Driver == "" || t.Driver == DriverProcess) && t.StateFile == "" && t.PIDFile == "" && t.Cmdline == "" &&
		len(t.Labels) == 0 && len(t.Containers) == 0 && t.Selector == "" && t.Namespace == "" {
		t.StateFile = path
	}
	return t
}

// Validate reports every problem with t at once; call it after WithDefaults.
// It does not look at the system: whether the files, processes and
// containers exist is found out when the fault is injected.
func (t TargetParams) Validate() error {
	return t.problems().Err()
}

func (t TargetParams) problems() field.Problems {
	var ps field.Problems
	process := t.StateFile != "" || t.PIDFile != "" || t.Cmdline != ""
	docker := len(t.Labels) > 0 || len(t.Containers) > 0
	kube := t.Namespace != "" || t.Selector != "" || t.Kubeconfig != "" || t.Context != ""
	if kube && t.Driver != DriverKubernetes {
		ps.AddNamed("target", ": namespace, selector, kubeconfig and context are for the kubernetes driver, not %s", t.Driver)
	}
	switch t.Driver {
	case DriverProcess:
		n := 0
		for _, s := range []string{t.StateFile, t.PIDFile, t.Cmdline} {
			if s != "" {
				n++
			}
		}
		if n != 1 {
			ps.AddNamed("target", ": the process driver needs exactly one of state_file, pid_file and cmdline, got %d", n)
		}
		if docker {
			ps.AddNamed("target", ": labels and containers are for the docker driver, not process")
		}
		if t.Cmdline != "" {
			if _, err := regexp.Compile(t.Cmdline); err != nil {
				ps.AddNamed("target.cmdline", ": %w", err)
			}
		}
		switch {
		case t.Match == "" || t.Match == MatchExe || t.Match == MatchCmdline:
			if t.Match != "" && t.Cmdline == "" {
				ps.AddNamed("target.match", ": is for a cmdline pattern")
			}
		default:
			ps.AddNamed("target.match", ": %q, want exe or cmdline", t.Match)
		}
	case DriverDocker:
		if !docker {
			ps.AddNamed("target", ": the docker driver needs labels or containers")
		}
		if process || t.Match != "" {
			ps.AddNamed("target", ": state_file, pid_file, cmdline and match are for the process driver, not docker")
		}
		for k := range t.Labels {
			if strings.TrimSpace(k) == "" {
				ps.AddNamed("target.labels", ": a label name is empty")
				break
			}
		}
		for _, c := range t.Containers {
			if strings.TrimSpace(c) == "" {
				ps.AddNamed("target.containers", ": a container name is empty")
				break
			}
		}
	case DriverKubernetes:
		if process || docker || t.Match != "" {
			ps.AddNamed("target", ": state_file, pid_file, cmdline, match, labels and containers are for the process and docker drivers, not kubernetes")
		}
		ps = append(ps, kubernetesTargetProblems(t)...)
	default:
		ps.AddNamed("target.driver", ": %q, want process, docker or kubernetes", t.Driver)
	}
	return ps
}

// String describes t for the journal and the run's record.
func (t TargetParams) String() string {
	switch {
	case t.StateFile != "":
		return "state file " + t.StateFile
	case t.PIDFile != "":
		return "pid file " + t.PIDFile
	case t.Cmdline != "" && t.Match == MatchCmdline:
		return fmt.Sprintf("processes whose command line matches %q", t.Cmdline)
	case t.Cmdline != "":
		return fmt.Sprintf("processes matching %q", t.Cmdline)
	}
	var parts []string
	if len(t.Labels) > 0 {
		keys := make([]string, 0, len(t.Labels))
		for k := range t.Labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			keys[i] = k + "=" + t.Labels[k]
		}
		parts = append(parts, "labels "+strings.Join(keys, ","))
	}
	if len(t.Containers) > 0 {
		parts = append(parts, "containers "+strings.Join(t.Containers, ","))
	}
	if t.Driver == DriverKubernetes {
		ns := t.Namespace
		if ns == "" {
			ns = "the context's namespace"
		}
		return fmt.Sprintf("pods %q in %s", t.Selector, ns)
	}
	return "docker " + strings.Join(parts, " ")
}

// Open returns the driver for t (which must be valid). Opening connects to
// nothing: the docker driver dials the engine on each call.
func Open(t TargetParams) (Driver, error) {
	switch t.Driver {
	case DriverProcess, "":
		return NewProcess(t)
	case DriverDocker:
		return NewDocker(t)
	case DriverKubernetes:
		return NewKubernetes(t)
	}
	return nil, fmt.Errorf("target.driver: %q, want process, docker or kubernetes", t.Driver)
}

// Preview lists the replicas t matches now, up or not, with what matched
// them (a process's pid, name and command line; a container's id and
// status), without acting on any: what a dry run shows. A target that
// matches llmchaos itself, or a container that has not opted in, is an
// error, as it would be at injection.
func Preview(ctx context.Context, t TargetParams) ([]Target, error) {
	t = t.WithDefaults()
	if err := t.Validate(); err != nil {
		return nil, err
	}
	d, err := Open(t)
	if err != nil {
		return nil, err
	}
	if p, ok := d.(*Process); ok {
		return p.preview(ctx)
	}
	return d.Targets(ctx)
}

// OpenWatcher returns the watcher of the replicas t names: the state file's
// replicas, the processes, the containers' engine events, or the pods'
// status changes and Kubernetes events.
func OpenWatcher(t TargetParams) (Watcher, error) {
	d, err := Open(t)
	if err != nil {
		return nil, err
	}
	w, ok := d.(Watcher)
	if !ok {
		return nil, fmt.Errorf("driver %s reports no events", t.Driver)
	}
	return w, nil
}
