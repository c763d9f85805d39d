package replica

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// A process that takes the place of one that exited is the same replica:
// the one on the old one's port, else the one with its parent, else the
// replica that lost its process first; a process that replaces none is a
// new replica.
func TestProcTrackerReplacements(t *testing.T) {
	t.Parallel()
	at := time.Unix(100, 0)
	// two replicas, each under its own restart loop (parents 10 and 20)
	first := []procSeen{{PID: 101, Start: 1, PPID: 10, Ports: []int{8001}}, {PID: 201, Start: 1, PPID: 20, Ports: []int{8002}}}
	tests := []struct {
		name  string
		looks [][]procSeen
		want  []Event
	}{
		{
			name:  "nothing changes",
			looks: [][]procSeen{first, first},
		},
		{
			name: "killed, then its restart loop starts it again",
			looks: [][]procSeen{
				{first[1]},
				{first[1], {PID: 105, Start: 9, PPID: 10}},
			},
			want: []Event{
				{At: at, Replica: "pid-101", Kind: EventExit, Detail: "pid 101"},
				{At: at, Replica: "pid-101", Kind: EventStart, Detail: "pid 105, replaces pid 101"},
			},
		},
		{
			name: "exit and replacement in one look",
			looks: [][]procSeen{
				{first[1], {PID: 105, Start: 9, PPID: 10}},
			},
			want: []Event{
				{At: at, Replica: "pid-101", Kind: EventExit, Detail: "pid 101"},
				{At: at, Replica: "pid-101", Kind: EventStart, Detail: "pid 105, replaces pid 101"},
			},
		},
		{
			name: "both killed: each replacement by its parent, whatever the order of pids",
			looks: [][]procSeen{
				{{PID: 150, Start: 9, PPID: 20}, {PID: 160, Start: 9, PPID: 10}},
			},
			want: []Event{
				{At: at, Replica: "pid-101", Kind: EventExit, Detail: "pid 101"},
				{At: at, Replica: "pid-201", Kind: EventExit, Detail: "pid 201"},
				{At: at, Replica: "pid-201", Kind: EventStart, Detail: "pid 150, replaces pid 201"},
				{At: at, Replica: "pid-101", Kind: EventStart, Detail: "pid 160, replaces pid 101"},
			},
		},
		{
			name: "both killed under systemd (parent 1): by port",
			looks: [][]procSeen{
				{},
				{{PID: 150, Start: 9, PPID: 1, Ports: []int{8002}}, {PID: 160, Start: 9, PPID: 1, Ports: []int{8001}}},
			},
			want: []Event{
				{At: at, Replica: "pid-101", Kind: EventExit, Detail: "pid 101"},
				{At: at, Replica: "pid-201", Kind: EventExit, Detail: "pid 201"},
				{At: at, Replica: "pid-201", Kind: EventStart, Detail: "pid 150, replaces pid 201"},
				{At: at, Replica: "pid-101", Kind: EventStart, Detail: "pid 160, replaces pid 101"},
			},
		},
		{
			name: "nothing to tell them apart: the first to go is the first replaced",
			looks: [][]procSeen{
				{first[0]},
				{},
				{{PID: 150, Start: 9, PPID: 1}},
			},
			want: []Event{
				{At: at, Replica: "pid-201", Kind: EventExit, Detail: "pid 201"},
				{At: at, Replica: "pid-101", Kind: EventExit, Detail: "pid 101"},
				{At: at, Replica: "pid-201", Kind: EventStart, Detail: "pid 150, replaces pid 201"},
			},
		},
		{
			name: "a pid reused by a new process is a new process",
			looks: [][]procSeen{
				{{PID: 101, Start: 7, PPID: 10}, first[1]},
			},
			want: []Event{
				{At: at, Replica: "pid-101", Kind: EventExit, Detail: "pid 101"},
				{At: at, Replica: "pid-101", Kind: EventStart, Detail: "pid 101, replaces pid 101"},
			},
		},
		{
			name: "a third process is a new replica",
			looks: [][]procSeen{
				append(slices.Clone(first), procSeen{PID: 301, Start: 5, PPID: 30}),
			},
			want: []Event{{At: at, Replica: "pid-301", Kind: EventStart, Detail: "pid 301"}},
		},
		{
			name: "frozen and resumed",
			looks: [][]procSeen{
				{{PID: 101, Start: 1, PPID: 10, Stopped: true}, first[1]},
				first,
			},
			want: []Event{
				{At: at, Replica: "pid-101", Kind: EventPause, Detail: "pid 101"},
				{At: at, Replica: "pid-101", Kind: EventUnpause, Detail: "pid 101"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newProcTracker(first)
			var got []Event
			for _, l := range tt.looks {
				got = append(got, tr.update(l, at)...)
			}
			checkObjects(t, got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("events =\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

// A replacement is checked for its first answer; the answer of a process
// that was replaced since, or a second answer, reports nothing.
func TestProcTrackerHealthy(t *testing.T) {
	t.Parallel()
	at := time.Unix(100, 0)
	tr := newProcTracker([]procSeen{{PID: 101, Start: 1, PPID: 10, Ports: []int{8001}}})
	if got := tr.probes(); len(got) != 0 {
		t.Fatalf("probes before any restart = %v, want none", got)
	}
	tr.update([]procSeen{{PID: 105, Start: 9, PPID: 10}}, at)
	probes := tr.probes()
	if len(probes) != 1 || probes[0].pid != 105 || !slices.Equal(probes[0].ports, []int{8001}) {
		t.Fatalf("probes after a restart = %+v, want pid 105 on the port of the one it replaces (8001)", probes)
	}
	if _, ok := tr.healthy("pid-101", 101, 1, 8001, at); ok {
		t.Error("healthy for the old process reported an event")
	}
	tr.update([]procSeen{{PID: 105, Start: 9, PPID: 10, Ports: []int{8001}}}, at)
	e, ok := tr.healthy("pid-101", 105, 9, 8001, at)
	want := Event{At: at, Replica: "pid-101", Kind: EventHealthy, Detail: "pid 105 answers on port 8001", Object: "pid 105 started 9"}
	if !ok || e != want {
		t.Errorf("healthy = %v, %v; want %v", e, ok, want)
	}
	if _, ok := tr.healthy("pid-101", 105, 9, 8001, at); ok {
		t.Error("a second answer reported another healthy event")
	}
	if got := tr.probes(); len(got) != 0 {
		t.Errorf("probes once healthy = %v, want none", got)
	}
}

// checkObjects checks that each event's Object names the process its
// Detail names, with a start time, and clears it for comparisons of the
// rest.
func checkObjects(t *testing.T, evs []Event) {
	t.Helper()
	for i, e := range evs {
		pid, _, _ := strings.Cut(strings.TrimPrefix(e.Detail, "pid "), ",")
		pid, _, _ = strings.Cut(pid, " ")
		if !strings.HasPrefix(e.Object, "pid "+pid+" started ") {
			t.Errorf("event %v: object %q, want the process of its detail with its start time", e, e.Object)
		}
		evs[i].Object = ""
	}
}
