package replica

import (
	"fmt"
	"time"

	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

// EventKind is what happened to a replica.
type EventKind string

// Event kinds. The process driver's state-file watcher reports exit,
// restart and healthy; its pid-file and command-line watcher reports start
// and exit; the docker driver reports what the engine says (die as exit,
// start, restart, health changes, oom, pause, unpause).
const (
	// EventExit: the replica's process ended (Detail says how).
	EventExit EventKind = "exit"
	// EventStart: a replica's process or container started.
	EventStart EventKind = "start"
	// EventRestart: a supervisor started a replica again after it exited.
	EventRestart EventKind = "restart"
	// EventHealthy: the replica serves again (its health check passes).
	EventHealthy EventKind = "healthy"
	// EventUnhealthy: the container's health check failed.
	EventUnhealthy EventKind = "unhealthy"
	// EventOOM: the engine saw the container run out of memory.
	EventOOM EventKind = "oom"
	// EventPause and EventUnpause: the container was frozen or resumed.
	EventPause   EventKind = "pause"
	EventUnpause EventKind = "unpause"
)

// Event is one thing a replica did, for the `events` of run.json, so that
// recovery is measured from what the service did and not only from what its
// clients saw.
type Event struct {
	// At is when it happened: the engine's timestamp for a container, the
	// time the watcher saw the change for a process (at most one poll
	// interval late).
	At time.Time `json:"at"`
	// Replica is the Target ID: "replica-0", "pid-1234", a container name.
	Replica string `json:"replica"`
	// Kind is what happened.
	Kind EventKind `json:"kind"`
	// Detail says more: the pid, the exit status, the restart count.
	Detail string `json:"detail,omitempty"`
}

// String formats e on one line.
func (e Event) String() string {
	s := e.At.Format(time.RFC3339Nano) + " " + e.Replica + " " + string(e.Kind)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// replicaID is the Target ID of a supervisor's replica.
func replicaID(index int) string { return fmt.Sprintf("replica-%d", index) }

// stateEvents derives the events between two readings of a supervisor's
// state file. A poll may miss steps (an exit and the restart after it fall
// between two readings), so each is inferred from what changed: a process
// that is no longer the replica's live process has exited; a higher restart
// count means the supervisor started it again; serving with a process not
// serving before means healthy again. Events come in that order.
func stateEvents(prev, cur []replicastate.Replica, at time.Time) []Event {
	var out []Event
	before := make(map[int]replicastate.Replica, len(prev))
	for _, r := range prev {
		before[r.Index] = r
	}
	for _, c := range cur {
		p, ok := before[c.Index]
		if !ok {
			continue
		}
		id := replicaID(c.Index)
		live := func(r replicastate.Replica) bool {
			return r.PID > 0 && (r.State == replicastate.StateStarting || r.State == replicastate.StateServing)
		}
		// The process seen before has exited if it was live and is no
		// longer the replica's live process.
		if live(p) && !(live(c) && c.PID == p.PID) {
			detail := fmt.Sprintf("pid %d", p.PID)
			// LastExit is the latest exit: this process's unless the
			// replica has exited again since.
			if c.LastExit != "" && (c.PID == p.PID || (c.Restarts-p.Restarts == 1 && live(c))) {
				detail += ": " + c.LastExit
			}
			out = append(out, Event{At: at, Replica: id, Kind: EventExit, Detail: detail})
		}
		if c.Restarts > p.Restarts {
			detail := fmt.Sprintf("restart %d", c.Restarts)
			if c.PID > 0 && c.PID != p.PID {
				detail += fmt.Sprintf(", pid %d", c.PID)
			}
			if n := c.Restarts - p.Restarts; n > 1 {
				detail += fmt.Sprintf(" (%d restarts since the last look)", n)
			}
			out = append(out, Event{At: at, Replica: id, Kind: EventRestart, Detail: detail})
			// The new process may have ended already too.
			if c.PID > 0 && c.PID != p.PID && !live(c) {
				d := fmt.Sprintf("pid %d", c.PID)
				if c.LastExit != "" {
					d += ": " + c.LastExit
				}
				out = append(out, Event{At: at, Replica: id, Kind: EventExit, Detail: d})
			}
		}
		if c.State == replicastate.StateServing && (p.State != replicastate.StateServing || p.PID != c.PID) {
			out = append(out, Event{At: at, Replica: id, Kind: EventHealthy,
				Detail: fmt.Sprintf("pid %d serving on port %d", c.PID, c.Port)})
		}
	}
	return out
}
