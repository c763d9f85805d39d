package gpu

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

// Hang is gpu.hang: it freezes the serving process, which from outside is
// what a wedged GPU looks like (the port accepts, nothing answers), until
// its Undo resumes it.
type Hang struct {
	name  string
	p     HangParams
	pause faults.Fault // nil: freeze the process here
}

var _ faults.Fault = (*Hang)(nil)

// NewHang returns gpu.hang on the one process p names, frozen with
// replica.PauseProcess (SIGSTOP through a pidfd; SIGCONT on Undo). p is
// validated.
func NewHang(name string, p HangParams) (*Hang, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("fault %q (%s): %w", name, TypeHang, err)
	}
	return &Hang{name: name, p: p}, nil
}

// NewHangVia returns gpu.hang acting through pause, a fault that freezes
// the serving process(es) and whose Undo resumes them: faults/replica's
// pause (SIGSTOP of a local process, docker pause of a container). The
// runner uses it where the target is selected as replica faults select
// theirs; the Hang adds its name to pause's errors.
func NewHangVia(name string, pause faults.Fault) (*Hang, error) {
	if pause == nil {
		return nil, fmt.Errorf("fault %q (%s): no pause fault to act through", name, TypeHang)
	}
	return &Hang{name: name, pause: pause}, nil
}

// Inject freezes the process and returns once the kernel shows it
// stopped. Before the SIGSTOP it records replica.KindSignalCont (pid and
// start time), whose reverter is in replica.Reverters; a process that is
// stopped already, or llmchaos itself or one of its ancestors, is refused.
func (h *Hang) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	wrap := func(err error) error { return fmt.Errorf("fault %q (%s): %w", h.name, TypeHang, err) }
	if h.pause != nil {
		undo, err := h.pause.Inject(ctx, log)
		if err != nil {
			return nil, wrap(err)
		}
		return undo, nil
	}
	pid, what, err := h.target()
	if err != nil {
		return nil, wrap(err)
	}
	undo, err := replica.PauseProcess(ctx, log, pid, h.name+": "+what)
	if err != nil {
		return nil, wrap(fmt.Errorf("%s: %w", what, err))
	}
	// Resume once: a later Undo must not resume a stop that someone else
	// made after ours ended.
	var mu sync.Mutex
	resumed := false
	return func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if resumed {
			return nil
		}
		if err := undo(ctx); err != nil {
			return wrap(err)
		}
		resumed = true
		return nil
	}, nil
}

// target resolves the process to freeze to its pid, and says what it is.
func (h *Hang) target() (int, string, error) {
	pid := h.p.PID
	what := "process " + strconv.Itoa(pid)
	switch {
	case h.p.PIDFile != "":
		b, err := os.ReadFile(h.p.PIDFile)
		if err != nil {
			return 0, "", fmt.Errorf("pid_file: %w", err)
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			return 0, "", fmt.Errorf("pid_file %s: holds %q, want a pid", h.p.PIDFile, strings.TrimSpace(string(b)))
		}
		what = fmt.Sprintf("process %d (from %s)", pid, h.p.PIDFile)
	case h.p.StateFile != "":
		rs, err := replicastate.Read(h.p.StateFile)
		if err != nil {
			return 0, "", fmt.Errorf("state_file: %w", err)
		}
		var found *replicastate.Replica
		for i := range rs {
			if rs[i].Index == h.p.Replica {
				found = &rs[i]
			}
		}
		switch {
		case found == nil:
			return 0, "", fmt.Errorf("state_file %s: no replica %d (it lists %d)", h.p.StateFile, h.p.Replica, len(rs))
		case found.PID <= 0 || (found.State != replicastate.StateServing && found.State != replicastate.StateStarting):
			return 0, "", fmt.Errorf("state_file %s: replica %d is %s, not running: nothing to freeze", h.p.StateFile, h.p.Replica, found.State)
		}
		pid = found.PID
		what = fmt.Sprintf("replica %d (pid %d)", h.p.Replica, pid)
	}
	return pid, what, nil
}

// hangType describes gpu.hang for Types.
func hangType() faults.Type {
	return faults.Type{
		Name: TypeHang, Family: Family, Lifetime: faults.Sustained, Target: faults.TargetParams,
		Summary:   "freeze the serving process, as a wedged GPU, until the revert resumes it",
		Example:   "state_file: state.json\nreplica: 0",
		NewParams: func() any { return &HangParams{} },
		Check:     func(p any) field.Problems { return faults.ParamProblems(p.(*HangParams).Validate()) },
		FromSim: func(p any, env faults.SimEnv) {
			q := p.(*HangParams)
			if q.PID == 0 && q.PIDFile == "" && q.StateFile == "" {
				q.StateFile = env.StateFile
			}
		},
		Defaults: faults.DefaultsBy[HangParams](),
		Build: func(env faults.BuildEnv, p any) (faults.Fault, error) {
			return NewHang(env.Name, *p.(*HangParams))
		},
		Reverters: replica.Reverters,
	}
}
