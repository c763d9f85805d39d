package replica

import (
	"slices"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/docker"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

func rep(index, pid int, state replicastate.State, restarts int, lastExit string) replicastate.Replica {
	return replicastate.Replica{Index: index, PID: pid, Port: 8000 + index, State: state, Restarts: restarts, LastExit: lastExit}
}

func TestStateEvents(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const (
		serving    = replicastate.StateServing
		starting   = replicastate.StateStarting
		exited     = replicastate.StateExited
		restarting = replicastate.StateRestarting
	)
	tests := []struct {
		name      string
		prev, cur []replicastate.Replica
		want      []Event
	}{
		{"nothing changed", []replicastate.Replica{rep(0, 10, serving, 0, "")}, []replicastate.Replica{rep(0, 10, serving, 0, "")}, nil},
		{"first start is not an event", []replicastate.Replica{rep(0, 10, starting, 0, "")}, []replicastate.Replica{rep(0, 10, serving, 0, "")},
			[]Event{{At: at, Replica: "replica-0", Kind: EventHealthy, Detail: "pid 10 serving on port 8000", Object: "pid 10 started 1000"}}},
		{"exit seen", []replicastate.Replica{rep(0, 10, serving, 0, "")}, []replicastate.Replica{rep(0, 10, exited, 0, "signal: killed")},
			[]Event{{At: at, Replica: "replica-0", Kind: EventExit, Detail: "pid 10: signal: killed", Object: "pid 10 started 1000"}}},
		{"restarting after exit is no new event", []replicastate.Replica{rep(0, 10, exited, 0, "signal: killed")}, []replicastate.Replica{rep(0, 10, restarting, 0, "signal: killed")}, nil},
		{"restart seen", []replicastate.Replica{rep(0, 10, restarting, 0, "signal: killed")}, []replicastate.Replica{rep(0, 11, starting, 1, "signal: killed")},
			[]Event{{At: at, Replica: "replica-0", Kind: EventRestart, Detail: "restart 1, pid 11", Object: "pid 11 started 1100"}}},
		{"exit, restart and healthy between two looks", []replicastate.Replica{rep(0, 10, serving, 0, ""), rep(1, 20, serving, 0, "")},
			[]replicastate.Replica{rep(0, 11, serving, 1, "signal: killed"), rep(1, 20, serving, 0, "")},
			[]Event{
				{At: at, Replica: "replica-0", Kind: EventExit, Detail: "pid 10: signal: killed", Object: "pid 10 started 1000"},
				{At: at, Replica: "replica-0", Kind: EventRestart, Detail: "restart 1, pid 11", Object: "pid 11 started 1100"},
				{At: at, Replica: "replica-0", Kind: EventHealthy, Detail: "pid 11 serving on port 8000", Object: "pid 11 started 1100"},
			}},
		{"restarted and died again", []replicastate.Replica{rep(0, 10, serving, 0, "")}, []replicastate.Replica{rep(0, 11, exited, 1, "exit status 4")},
			[]Event{
				{At: at, Replica: "replica-0", Kind: EventExit, Detail: "pid 10", Object: "pid 10 started 1000"},
				{At: at, Replica: "replica-0", Kind: EventRestart, Detail: "restart 1, pid 11", Object: "pid 11 started 1100"},
				{At: at, Replica: "replica-0", Kind: EventExit, Detail: "pid 11: exit status 4", Object: "pid 11 started 1100"},
			}},
		{"several restarts missed", []replicastate.Replica{rep(2, 10, starting, 0, "")}, []replicastate.Replica{rep(2, 13, starting, 3, "exit status 4")},
			[]Event{
				{At: at, Replica: "replica-2", Kind: EventExit, Detail: "pid 10", Object: "pid 10 started 1000"},
				{At: at, Replica: "replica-2", Kind: EventRestart, Detail: "restart 3, pid 13 (3 restarts since the last look)", Object: "pid 13 started 1300"},
			}},
		{"unknown index ignored", nil, []replicastate.Replica{rep(0, 10, serving, 0, "")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stateEvents(tt.prev, tt.cur, at, func(pid int) uint64 { return uint64(pid) * 100 })
			if !slices.Equal(got, tt.want) {
				t.Errorf("stateEvents() =\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

func TestDockerEvent(t *testing.T) {
	t.Parallel()
	const id = "0123456789abcdef0123"
	at := time.Unix(100, 5)
	msg := func(action string, attrs map[string]string) docker.Event {
		attrs["name"] = "sim-1"
		return docker.Event{Type: "container", Action: action,
			Actor: docker.Actor{ID: id, Attributes: attrs}, Time: 100, TimeNano: at.UnixNano()}
	}
	tests := []struct {
		name string
		in   docker.Event
		want Event
		ok   bool
	}{
		{"die", msg("die", map[string]string{"exitCode": "137"}), Event{At: at, Replica: "sim-1", Kind: EventExit, Detail: "exit code 137, id 0123456789ab", Object: "container " + id, Occurrence: "die@100000000005"}, true},
		{"start", msg("start", map[string]string{}), Event{At: at, Replica: "sim-1", Kind: EventStart, Detail: "id 0123456789ab", Object: "container " + id, Occurrence: "start@100000000005"}, true},
		{"healthy", msg("health_status: healthy", map[string]string{}), Event{At: at, Replica: "sim-1", Kind: EventHealthy, Detail: "id 0123456789ab", Object: "container " + id, Occurrence: "health_status: healthy@100000000005"}, true},
		{"unhealthy", msg("health_status: unhealthy", map[string]string{}), Event{At: at, Replica: "sim-1", Kind: EventUnhealthy, Detail: "id 0123456789ab", Object: "container " + id, Occurrence: "health_status: unhealthy@100000000005"}, true},
		{"oom", msg("oom", map[string]string{}), Event{At: at, Replica: "sim-1", Kind: EventOOM, Detail: "id 0123456789ab", Object: "container " + id, Occurrence: "oom@100000000005"}, true},
		{"pause", msg("pause", map[string]string{}), Event{At: at, Replica: "sim-1", Kind: EventPause, Detail: "id 0123456789ab", Object: "container " + id, Occurrence: "pause@100000000005"}, true},
		{"health starting skipped", msg("health_status: starting", map[string]string{}), Event{}, false},
		{"attach skipped", msg("attach", map[string]string{}), Event{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := dockerEvent(tt.in)
			if ok != tt.ok || got != tt.want {
				t.Errorf("dockerEvent() = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestDeduper: one happening reported by several watchers passes once; a
// later one of the same kind passes again; exact occurrences are told
// apart by their names, not their times.
func TestDeduper(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	proc := "pid 10 started 1000"
	steps := []struct {
		e    Event
		want bool
	}{
		{Event{At: at(0), Replica: "pid-10", Kind: EventExit, Object: proc}, true},
		{Event{At: at(100), Replica: "pid-10", Kind: EventExit, Object: proc}, false},    // a second watcher
		{Event{At: at(90), Replica: "pid-7", Kind: EventExit, Object: proc}, false},      // a third, named otherwise, seen earlier
		{Event{At: at(150), Replica: "pid-10", Kind: EventStart, Object: proc}, true},    // another kind
		{Event{At: at(150), Replica: "pid-11", Kind: EventExit, Object: "pid 11"}, true}, // another process
		{Event{At: at(3000), Replica: "pid-10", Kind: EventExit, Object: proc}, true},    // far later: another happening
		{Event{At: at(0), Kind: EventExit}, true},                                        // no object: never merged
		{Event{At: at(0), Kind: EventExit}, true},
		{Event{At: at(0), Kind: EventExit, Object: "container c", Occurrence: "die@1"}, true},
		{Event{At: at(0), Kind: EventExit, Object: "container c", Occurrence: "die@1"}, false},
		{Event{At: at(10), Kind: EventExit, Object: "container c", Occurrence: "die@2"}, true}, // a restart 10 ms later
	}
	var d Deduper
	for i, s := range steps {
		if got := d.First(s.e); got != s.want {
			t.Errorf("step %d (%v %s %s): First = %v, want %v", i, s.e.Kind, s.e.Object, s.e.Occurrence, got, s.want)
		}
	}
}
