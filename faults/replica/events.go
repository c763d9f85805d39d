package replica

import (
	"fmt"
	"strconv"
	"sync"
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
	// Object names what the event is about the same way for every watcher
	// that sees it, whatever the target that made the watcher named it
	// by: a process by pid and start time ("pid 1234 started 5678"), a
	// container by id ("container 3f2a…"), a pod by uid ("pod 1b2c…").
	// Empty when the watcher cannot tell.
	Object string `json:"object,omitempty"`
	// Occurrence, when set, names this very happening as its source names
	// it (a Docker event's action and engine time, a Kubernetes Event's uid
	// and count): events of one object with the same Occurrence are one.
	Occurrence string `json:"occurrence,omitempty"`
	// SourceTime is the source's own time of the event when At is not it:
	// a Kubernetes Event's, which has one-second resolution and so may
	// read earlier than its cause; At is then when the watch saw it.
	SourceTime time.Time `json:"source_time,omitzero"`
}

// processObject is the Object of a process: its pid and its start time
// (clock ticks after boot), which together name it across pid reuse.
func processObject(pid int, start uint64) string {
	if start == 0 {
		return "pid " + strconv.Itoa(pid)
	}
	return "pid " + strconv.Itoa(pid) + " started " + strconv.FormatUint(start, 10)
}

// DedupWindow is how far apart two watchers may see one happening: events
// of the same object and kind without an Occurrence are one when they are
// closer than this. It is many polls of the process watcher (WatchInterval)
// and its health probes; a pause and a resume of one process are one apart
// from the next pause by more than this in any fault.
const DedupWindow = 2 * time.Second

// Deduper passes each happening once when several watchers report it: the
// watchers of several faults that name one process in different ways (a
// pid file, a command-line pattern, a pid file of several), one container
// by different labels, one pod by different selectors. Safe for
// concurrent use.
type Deduper struct {
	mu   sync.Mutex
	seen map[dedupKey]time.Time
}

type dedupKey struct {
	object     string
	kind       EventKind
	occurrence string
}

// First reports whether e is the first report of what it says happened:
// an event with an Occurrence is a repeat when one with the same object,
// kind and Occurrence was passed; one without, when one of the same object
// and kind was passed less than DedupWindow apart. Events without an
// Object always pass.
func (d *Deduper) First(e Event) bool {
	if e.Object == "" {
		return true
	}
	k := dedupKey{object: e.Object, kind: e.Kind, occurrence: e.Occurrence}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen = map[dedupKey]time.Time{}
	}
	last, ok := d.seen[k]
	if ok && (e.Occurrence != "" || absDuration(e.At.Sub(last)) < DedupWindow) {
		return false
	}
	d.seen[k] = e.At
	return true
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
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
// state file; startOf gives a live process's start time (0: unknown) for
// the events' Object. A poll may miss steps (an exit and the restart after it fall
// between two readings), so each is inferred from what changed: a process
// that is no longer the replica's live process has exited; a higher restart
// count means the supervisor started it again; serving with a process not
// serving before means healthy again. Events come in that order.
func stateEvents(prev, cur []replicastate.Replica, at time.Time, startOf func(pid int) uint64) []Event {
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
			out = append(out, Event{At: at, Replica: id, Kind: EventExit, Detail: detail, Object: processObject(p.PID, startOf(p.PID))})
		}
		if c.Restarts > p.Restarts {
			detail := fmt.Sprintf("restart %d", c.Restarts)
			if c.PID > 0 && c.PID != p.PID {
				detail += fmt.Sprintf(", pid %d", c.PID)
			}
			if n := c.Restarts - p.Restarts; n > 1 {
				detail += fmt.Sprintf(" (%d restarts since the last look)", n)
			}
			out = append(out, Event{At: at, Replica: id, Kind: EventRestart, Detail: detail, Object: processObject(c.PID, startOf(c.PID))})
			// The new process may have ended already too.
			if c.PID > 0 && c.PID != p.PID && !live(c) {
				d := fmt.Sprintf("pid %d", c.PID)
				if c.LastExit != "" {
					d += ": " + c.LastExit
				}
				out = append(out, Event{At: at, Replica: id, Kind: EventExit, Detail: d, Object: processObject(c.PID, startOf(c.PID))})
			}
		}
		if c.State == replicastate.StateServing && (p.State != replicastate.StateServing || p.PID != c.PID) {
			out = append(out, Event{At: at, Replica: id, Kind: EventHealthy,
				Detail: fmt.Sprintf("pid %d serving on port %d", c.PID, c.Port), Object: processObject(c.PID, startOf(c.PID))})
		}
	}
	return out
}
