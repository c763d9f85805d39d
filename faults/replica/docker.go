package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/docker"
)

// Docker is the docker driver: replicas are containers, found by label or
// name through the Docker Engine API and acted on through it. Only
// containers that opt in with the label llmchaos.io/target=true are ever
// acted on; a target that matches any other container is refused as a
// whole, naming it.
//
// The engine is found as the docker CLI finds it (DOCKER_HOST,
// DOCKER_TLS_VERIFY, DOCKER_CERT_PATH; the local socket by default), and
// the API version is negotiated with it on the first call
// (DOCKER_API_VERSION pins one): internal/docker. A client is made for each
// call, so the driver holds no connection between faults.
type Docker struct {
	t TargetParams
}

var (
	_ Driver  = (*Docker)(nil)
	_ Watcher = (*Docker)(nil)
)

// NewDocker returns the docker driver of t, which must be valid and name the
// docker driver.
func NewDocker(t TargetParams) (*Docker, error) {
	t = t.WithDefaults()
	if t.Driver != DriverDocker {
		return nil, fmt.Errorf("docker driver: target names driver %q", t.Driver)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("docker driver: %w", err)
	}
	return &Docker{t: t}, nil
}

// dockerClient returns a client of the engine configured from the
// environment; the caller closes it.
func dockerClient() (*docker.Client, error) {
	cli, err := docker.FromEnv()
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return cli, nil
}

// containerName is a container's name without the leading slash.
func containerName(names []string, id string) string {
	if len(names) > 0 {
		return strings.TrimPrefix(names[0], "/")
	}
	return shortID(id)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Targets lists the containers that match the labels and names of the
// target, running or not, by name. It fails, naming them, if any lacks the
// opt-in label, and if a named container does not exist (or does not match
// the labels too).
func (d *Docker) Targets(ctx context.Context) ([]Target, error) {
	cli, err := dockerClient()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	f := docker.Filters{}
	for _, k := range slices.Sorted(maps.Keys(d.t.Labels)) {
		f["label"] = append(f["label"], k+"="+d.t.Labels[k])
	}
	items, err := cli.ContainerList(ctx, true, f)
	if err != nil {
		return nil, fmt.Errorf("docker driver: list containers (%s): %w", d.t, err)
	}
	if len(d.t.Containers) > 0 {
		var (
			keep    []docker.Container
			missing []string
		)
		for _, want := range d.t.Containers {
			found := false
			for _, c := range items {
				if containerMatches(c, want) {
					found = true
					if !slices.ContainsFunc(keep, func(k docker.Container) bool { return k.ID == c.ID }) {
						keep = append(keep, c)
					}
				}
			}
			if !found {
				missing = append(missing, want)
			}
		}
		if len(missing) > 0 {
			what := "no such container"
			if len(d.t.Labels) > 0 {
				what = "no such container with the target's labels"
			}
			return nil, fmt.Errorf("docker driver: %s: %s", what, strings.Join(missing, ", "))
		}
		items = keep
	}
	var (
		ts      []Target
		refused []error
	)
	for _, c := range items {
		name := containerName(c.Names, c.ID)
		if c.Labels[OptInLabel] != OptInLabelValue {
			refused = append(refused, fmt.Errorf("container %q (id %s) matches %s but does not carry the label %s=%s: %w; add the label to let llmchaos act on it",
				name, shortID(c.ID), d.t, OptInLabel, OptInLabelValue, ErrNotOptedIn))
			continue
		}
		ts = append(ts, Target{
			ID:        name,
			Container: c.ID,
			Index:     -1,
			Up:        containerUp(c),
			Detail:    fmt.Sprintf("id %s, %s", shortID(c.ID), c.Status),
		})
	}
	if err := errors.Join(refused...); err != nil {
		return nil, fmt.Errorf("docker driver: refused: %w", err)
	}
	slices.SortFunc(ts, func(a, b Target) int { return strings.Compare(a.ID, b.ID) })
	return ts, nil
}

// containerMatches reports whether c is the container want names: by name,
// full id or id prefix.
func containerMatches(c docker.Container, want string) bool {
	if strings.HasPrefix(c.ID, want) {
		return true
	}
	for _, n := range c.Names {
		if strings.TrimPrefix(n, "/") == strings.TrimPrefix(want, "/") {
			return true
		}
	}
	return false
}

// containerUp reports whether c serves: running, not paused, and not
// failing or still starting its health check.
func containerUp(c docker.Container) bool {
	if c.State != docker.StateRunning {
		return false
	}
	if c.Health != nil {
		return c.Health.Status != docker.HealthUnhealthy && c.Health.Status != docker.HealthStarting
	}
	// Engines before API 1.52 tell the health only in the status text.
	return !strings.Contains(c.Status, "(unhealthy)") && !strings.Contains(c.Status, "(health: starting)")
}

// DockerSpec is the data of a KindDockerUnpause or KindDockerStart spec.
type DockerSpec struct {
	// ID is the container's full id; Name is for people.
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Action is what was done (kill, stop, restart; KindDockerStart), and
	// Signal and PID the signal of a kill and the host pid it was sent to.
	Action string `json:"action,omitempty"`
	Signal string `json:"signal,omitempty"`
	PID    int    `json:"pid,omitempty"`
	// Timeout bounds how long the revert waits for the container to run
	// (KindDockerStart; DefaultBackTimeout when zero).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Apply acts on the container t through the engine. A kill via process
// signals the container's main process from the host (Docker sees a crash
// and applies the restart policy); via engine it is `docker kill`. Stop and
// restart take the grace period rounded up to whole seconds. A kill, stop
// or restart is journaled as a KindDockerStart spec first, and its Undo
// has the container running again: it waits while the engine restarts it,
// and starts it when it stays stopped (a stop, or a kill that the restart
// policy leaves alone).
func (d *Docker) Apply(ctx context.Context, log faults.RevertLog, t Target, a Action) (faults.Undo, error) {
	cli, err := dockerClient()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	if a.Kind == ActionPause {
		return d.pause(ctx, cli, log, t)
	}
	spec := DockerSpec{ID: t.Container, Name: t.ID, Action: string(a.Kind), Timeout: a.Timeout}
	if spec.Timeout <= 0 {
		spec.Timeout = DefaultBackTimeout
	}
	var sig syscall.Signal
	switch a.Kind {
	case ActionKill:
		if sig, err = ParseSignal(a.Signal); err != nil {
			return nil, err
		}
		spec.Signal = SignalName(sig)
	case ActionStop, ActionRestart:
	default:
		return nil, fmt.Errorf("docker driver: unknown action %q", a.Kind)
	}
	var pid int
	if a.Kind == ActionKill && a.Via != ViaEngine {
		if pid, err = mainPID(ctx, cli, t); err != nil {
			return nil, err
		}
		spec.PID = pid
	}
	data, err := journal(log, KindDockerStart, spec, spec.Action, t.ID)
	if err != nil {
		return nil, err
	}
	undo := func(ctx context.Context) error { return ensureRunning(ctx, data) }
	secs := graceSeconds(a.Grace)
	switch {
	case a.Kind == ActionKill && a.Via == ViaEngine:
		if err := cli.ContainerKill(ctx, t.Container, spec.Signal); err != nil {
			return nil, fmt.Errorf("docker kill: %w", err)
		}
	case a.Kind == ActionKill:
		if err := signalContainerProcess(pid, t.Container, sig); err != nil {
			return nil, err
		}
	case a.Kind == ActionStop:
		if err := cli.ContainerStop(ctx, t.Container, secs); err != nil {
			return nil, fmt.Errorf("docker stop: %w", err)
		}
	case a.Kind == ActionRestart:
		// docker restart, in its two steps: once the stop is done the fault
		// is in place; a start that fails leaves it for the revert, which
		// starts the container or fails loudly, as after a stop.
		if err := cli.ContainerStop(ctx, t.Container, secs); err != nil {
			return nil, fmt.Errorf("docker restart: stop: %w", err)
		}
		if err := cli.ContainerStart(ctx, t.Container); err != nil && ctx.Err() == nil {
			return undo, nil // ensureRunning tries again and says why it cannot
		}
	}
	return undo, nil
}

// pause pauses the container t, after journaling how to unpause it.
func (d *Docker) pause(ctx context.Context, cli *docker.Client, log faults.RevertLog, t Target) (faults.Undo, error) {
	data, err := journal(log, KindDockerUnpause, DockerSpec{ID: t.Container, Name: t.ID}, "pause", t.ID)
	if err != nil {
		return nil, err
	}
	undo := func(ctx context.Context) error { return unpause(ctx, data) }
	if err := cli.ContainerPause(ctx, t.Container); err != nil {
		err = fmt.Errorf("docker pause: %w", err)
		if uerr := undo(context.WithoutCancel(ctx)); uerr != nil {
			err = errors.Join(err, uerr)
		}
		return nil, err
	}
	return undo, nil
}

// mainPID returns the host pid of the running container t's main process.
func mainPID(ctx context.Context, cli *docker.Client, t Target) (int, error) {
	res, err := cli.ContainerInspect(ctx, t.Container)
	if err != nil {
		return 0, fmt.Errorf("docker inspect: %w", err)
	}
	st := res.State
	if st == nil || !st.Running || st.Pid <= 0 {
		return 0, fmt.Errorf("container %s is not running: %w", t.ID, ErrGone)
	}
	return st.Pid, nil
}

// graceSeconds rounds g up to whole seconds, as the engine takes them.
func graceSeconds(g time.Duration) int {
	return int((g + time.Second - 1) / time.Second)
}

// revertDockerUnpause is the Reverter of KindDockerUnpause, with the engine
// found from the environment.
func revertDockerUnpause(ctx context.Context, data json.RawMessage) error {
	return unpause(ctx, data)
}

// revertDockerStart is the Reverter of KindDockerStart, with the engine
// found from the environment.
func revertDockerStart(ctx context.Context, data json.RawMessage) error {
	return ensureRunning(ctx, data)
}

// dockerPoll is how often ensureRunning looks at the container.
const dockerPoll = 100 * time.Millisecond

// ensureRunning has the container a DockerSpec names running again: it
// waits while the engine restarts it (a restart policy at work) and starts
// it when it is stopped, until it runs or the spec's timeout ends. A
// container that is gone counts as reverted; one that does not run in
// time is an error naming its state.
func ensureRunning(ctx context.Context, data json.RawMessage) error {
	var s DockerSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s spec: %w", KindDockerStart, err)
	}
	if s.ID == "" {
		return fmt.Errorf("%s spec: no container id", KindDockerStart)
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultBackTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	var last error
	state := "unknown"
	for {
		res, err := cli.ContainerInspect(ctx, s.ID)
		switch {
		case docker.IsNotFound(err):
			return nil
		case err != nil:
			last = err
		case res.State == nil:
			last = errors.New("the engine reports no state")
		default:
			st := res.State
			state = st.Status
			switch {
			case st.Running && !st.Restarting:
				return nil
			case st.Restarting:
				// The restart policy is at work.
			default:
				if err := cli.ContainerStart(ctx, s.ID); err != nil {
					last = fmt.Errorf("docker start: %w", err)
				}
			}
		}
		select {
		case <-ctx.Done():
			err := fmt.Errorf("container %s (%s) was %s and does not run again within %v (state %s)", s.Name, shortID(s.ID), actionPast(s.Action), timeout, state)
			if last != nil {
				err = fmt.Errorf("%w: %w", err, last)
			}
			return fmt.Errorf("%w: %w", err, context.Cause(ctx))
		case <-time.After(dockerPoll):
		}
	}
}

// unpause unpauses the container a DockerSpec names. A container that is
// gone, or not paused (any more), counts as reverted.
func unpause(ctx context.Context, data json.RawMessage) error {
	var s DockerSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s spec: %w", KindDockerUnpause, err)
	}
	if s.ID == "" {
		return fmt.Errorf("%s spec: no container id", KindDockerUnpause)
	}
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	err = cli.ContainerUnpause(ctx, s.ID)
	if docker.IsNotFound(err) {
		return nil
	}
	if err == nil {
		// The engine's answer is not the container's state: a revert is
		// ok only once the container no longer reads paused.
		return awaitUnpaused(ctx, cli, s)
	}
	// The engine refuses to unpause a container that is not paused: look.
	res, ierr := cli.ContainerInspect(ctx, s.ID)
	if docker.IsNotFound(ierr) {
		return nil
	}
	if ierr == nil && res.State != nil && !res.State.Paused {
		return nil
	}
	return fmt.Errorf("unpause container %s (%s): %w", s.Name, shortID(s.ID), err)
}

// awaitUnpaused waits (a few seconds at most) until the container of s no
// longer reads paused; a container that is gone counts as unpaused.
func awaitUnpaused(ctx context.Context, cli *docker.Client, s DockerSpec) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		res, err := cli.ContainerInspect(ctx, s.ID)
		switch {
		case docker.IsNotFound(err):
			return nil
		case err == nil && (res.State == nil || !res.State.Paused):
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("unpause container %s (%s): the engine answered, but it still reads paused", s.Name, shortID(s.ID))
		}
		select {
		case <-ctx.Done():
		case <-time.After(dockerPoll):
		}
	}
}

// dockerEventActions are the engine events the watcher asks for.
var dockerEventActions = []string{"die", "start", "restart", "oom", "pause", "unpause", "health_status"}

// Watch streams the engine's events of the target's containers (opted-in
// ones only) until ctx ends or the stream fails. Event times are the
// engine's.
func (d *Docker) Watch(ctx context.Context, ready func(), emit func(Event)) error {
	cli, err := dockerClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	f := docker.Filters{
		"type":  {"container"},
		"event": dockerEventActions,
		"label": {OptInLabel + "=" + OptInLabelValue},
	}
	for _, k := range slices.Sorted(maps.Keys(d.t.Labels)) {
		f["label"] = append(f["label"], k+"="+d.t.Labels[k])
	}
	if len(d.t.Containers) > 0 {
		f["container"] = d.t.Containers
	}
	// Events returns once the engine has answered the subscription: from
	// here on no event is missed.
	stream, err := cli.Events(ctx, f)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("docker events: %w", err)
	}
	defer stream.Close()
	if ready != nil {
		ready()
	}
	for {
		m, err := stream.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("docker events: %w", err)
		}
		if e, ok := dockerEvent(m); ok {
			emit(e)
		}
	}
}

// dockerEvent turns an engine event into a replica event.
func dockerEvent(m docker.Event) (Event, bool) {
	at := time.Unix(m.Time, 0)
	if m.TimeNano != 0 {
		at = time.Unix(0, m.TimeNano)
	}
	attrs := m.Actor.Attributes
	e := Event{At: at, Replica: attrs["name"], Detail: "id " + shortID(m.Actor.ID),
		Object: "container " + m.Actor.ID, Occurrence: m.Action + "@" + strconv.FormatInt(at.UnixNano(), 10)}
	if e.Replica == "" {
		e.Replica = shortID(m.Actor.ID)
	}
	action := m.Action
	switch {
	case action == "die":
		e.Kind = EventExit
		if code, ok := attrs["exitCode"]; ok {
			e.Detail = "exit code " + code + ", " + e.Detail
		}
	case action == "start":
		e.Kind = EventStart
	case action == "restart":
		e.Kind = EventRestart
	case action == "oom":
		e.Kind = EventOOM
	case action == "pause":
		e.Kind = EventPause
	case action == "unpause":
		e.Kind = EventUnpause
	case strings.HasPrefix(action, "health_status"):
		switch strings.TrimSpace(strings.TrimPrefix(action, "health_status:")) {
		case "healthy":
			e.Kind = EventHealthy
		case "unhealthy":
			e.Kind = EventUnhealthy
		default:
			return Event{}, false
		}
	default:
		return Event{}, false
	}
	return e, true
}
