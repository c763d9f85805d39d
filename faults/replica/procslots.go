package replica

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// procSeen is one live process of a pid-file or command-line target, as
// one look at the process list saw it.
type procSeen struct {
	PID   int
	Start uint64 // start time: with PID, names the process across pid reuse
	PPID  int    // parent: a restart loop or a supervisor
	// Stopped is set while the process is stopped by a signal (SIGSTOP).
	Stopped bool
	// Ports are the TCP ports it listens on, when known (nil otherwise).
	Ports []int
}

// procSlot is one replica of a pid-file or command-line target: the
// process that serves it now, if any, and what tells its replacement
// apart (the parent that starts it again, the port it listens on).
type procSlot struct {
	id      string // "pid-" and the pid of the first process seen in it
	pid     int    // the current process; 0 while it has none
	start   uint64
	last    int // the pid of the process before, for a replacement's start
	ppid    int
	ports   []int
	stopped bool
	// vacated orders slots that lost their process: the oldest vacancy
	// is filled first.
	vacated int
	// awaitHealthy is set for a process that replaced another until it is
	// seen answering on its port.
	awaitHealthy bool
}

// procTracker turns successive looks at a pid-file or command-line target
// into replica events. A process that replaces one that exited is the same
// replica (it keeps the replica's name): the one that listens on the port
// the old one listened on, else the one with the same parent (the restart
// loop that ran the old one), else the replica that lost its process
// first. A process that replaces none is a new replica, named after its
// pid.
type procTracker struct {
	slots   []*procSlot
	vacancy int
}

// newProcTracker starts tracking from a first look: every process in it is
// a replica, without events.
func newProcTracker(first []procSeen) *procTracker {
	tr := &procTracker{}
	for _, p := range sortedSeen(first) {
		tr.slots = append(tr.slots, &procSlot{id: "pid-" + strconv.Itoa(p.PID), pid: p.PID, start: p.Start,
			ppid: p.PPID, ports: p.Ports, stopped: p.Stopped})
	}
	return tr
}

func sortedSeen(seen []procSeen) []procSeen {
	out := slices.Clone(seen)
	slices.SortFunc(out, func(a, b procSeen) int { return cmp.Compare(a.PID, b.PID) })
	return out
}

// update takes the next look and returns what changed, in order: exits,
// then starts (a replacement names the process it replaces), then pauses
// and resumes.
func (tr *procTracker) update(cur []procSeen, at time.Time) []Event {
	type ref struct {
		pid   int
		start uint64
	}
	now := make(map[ref]procSeen, len(cur))
	for _, p := range cur {
		now[ref{p.PID, p.Start}] = p
	}
	var evs []Event
	// Exits.
	for _, s := range tr.slots {
		if s.pid == 0 {
			continue
		}
		if _, ok := now[ref{s.pid, s.start}]; !ok {
			evs = append(evs, Event{At: at, Replica: s.id, Kind: EventExit, Detail: "pid " + strconv.Itoa(s.pid), Object: processObject(s.pid, s.start)})
			tr.vacancy++
			s.last = s.pid
			s.pid, s.start, s.stopped, s.awaitHealthy, s.vacated = 0, 0, false, false, tr.vacancy
		}
	}
	// Starts, and what the others do.
	known := map[ref]*procSlot{}
	for _, s := range tr.slots {
		if s.pid != 0 {
			known[ref{s.pid, s.start}] = s
		}
	}
	var pauses []Event
	for _, p := range sortedSeen(cur) {
		s, ok := known[ref{p.PID, p.Start}]
		if !ok {
			detail := "pid " + strconv.Itoa(p.PID)
			if s = tr.place(p); s != nil {
				detail += fmt.Sprintf(", replaces pid %d", s.last)
				s.awaitHealthy = true
			} else {
				s = &procSlot{id: "pid-" + strconv.Itoa(p.PID)}
				tr.slots = append(tr.slots, s)
			}
			s.pid, s.start, s.ppid, s.stopped, s.vacated = p.PID, p.Start, p.PPID, false, 0
			evs = append(evs, Event{At: at, Replica: s.id, Kind: EventStart, Detail: detail, Object: processObject(p.PID, p.Start)})
		}
		if len(p.Ports) > 0 {
			s.ports = p.Ports
		}
		if p.Stopped != s.stopped {
			s.stopped = p.Stopped
			kind := EventUnpause
			if p.Stopped {
				kind = EventPause
			}
			pauses = append(pauses, Event{At: at, Replica: s.id, Kind: kind, Detail: "pid " + strconv.Itoa(p.PID), Object: processObject(p.PID, p.Start)})
		}
	}
	return append(evs, pauses...)
}

// place returns the replica that lost its process whose place a new
// process p takes, nil when p replaces none.
func (tr *procTracker) place(p procSeen) *procSlot {
	var vacant []*procSlot
	for _, s := range tr.slots {
		if s.pid == 0 && s.vacated > 0 {
			vacant = append(vacant, s)
		}
	}
	if len(vacant) == 0 {
		return nil
	}
	slices.SortFunc(vacant, func(a, b *procSlot) int { return cmp.Compare(a.vacated, b.vacated) })
	pick := vacant[0]
	switch {
	case len(p.Ports) > 0 && slices.ContainsFunc(vacant, func(s *procSlot) bool { return sharePort(s.ports, p.Ports) }):
		pick = vacant[slices.IndexFunc(vacant, func(s *procSlot) bool { return sharePort(s.ports, p.Ports) })]
	case p.PPID > 1 && slices.ContainsFunc(vacant, func(s *procSlot) bool { return s.ppid == p.PPID }):
		pick = vacant[slices.IndexFunc(vacant, func(s *procSlot) bool { return s.ppid == p.PPID })]
	}
	return pick
}

func sharePort(a, b []int) bool {
	for _, p := range a {
		if slices.Contains(b, p) {
			return true
		}
	}
	return false
}

// healthy records that the process pid of replica id answered on port,
// and returns the event to report: none when that replica has another
// process now, or was not waiting for one to answer.
func (tr *procTracker) healthy(id string, pid int, start uint64, port int, at time.Time) (Event, bool) {
	for _, s := range tr.slots {
		if s.id == id && s.pid == pid && s.start == start && s.awaitHealthy {
			s.awaitHealthy = false
			return Event{At: at, Replica: id, Kind: EventHealthy,
				Detail: fmt.Sprintf("pid %d answers on port %d", pid, port), Object: processObject(pid, start)}, true
		}
	}
	return Event{}, false
}

// wantsPorts reports whether the next look should read the ports process
// pid listens on: for a process not seen before, one whose ports are not
// known yet, and one that is to be checked for its first answer.
func (tr *procTracker) wantsPorts(pid int, start uint64) bool {
	for _, s := range tr.slots {
		if s.pid == pid && s.start == start {
			return len(s.ports) == 0 || s.awaitHealthy
		}
	}
	return true
}

// probes lists the replicas waiting for their new process to answer, with
// the ports it listens on (empty while none is known).
func (tr *procTracker) probes() []procProbe {
	var out []procProbe
	for _, s := range tr.slots {
		if s.pid != 0 && s.awaitHealthy {
			out = append(out, procProbe{id: s.id, pid: s.pid, start: s.start, ports: s.ports})
		}
	}
	return out
}

// procProbe is a process to check for a first healthy answer.
type procProbe struct {
	id    string
	pid   int
	start uint64
	ports []int
}

func (p procProbe) key() string {
	return p.id + "/" + strconv.Itoa(p.pid) + "/" + strconv.FormatUint(p.start, 10)
}
