package replica

import (
	"slices"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"

	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

func rep(index, pid int, state replicastate.State, restarts int, lastExit string) replicastate.Replica {
	return replicastate.Replica{Index: index, PID: pid, Port: 8000 + index, State: state, Restarts: restarts, LastExit: lastExit}
}

func TestStateEvents(t *testing.T) {
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
			[]Event{{at, "replica-0", EventHealthy, "pid 10 serving on port 8000"}}},
		{"exit seen", []replicastate.Replica{rep(0, 10, serving, 0, "")}, []replicastate.Replica{rep(0, 10, exited, 0, "signal: killed")},
			[]Event{{at, "replica-0", EventExit, "pid 10: signal: killed"}}},
		{"restarting after exit is no new event", []replicastate.Replica{rep(0, 10, exited, 0, "signal: killed")}, []replicastate.Replica{rep(0, 10, restarting, 0, "signal: killed")}, nil},
		{"restart seen", []replicastate.Replica{rep(0, 10, restarting, 0, "signal: killed")}, []replicastate.Replica{rep(0, 11, starting, 1, "signal: killed")},
			[]Event{{at, "replica-0", EventRestart, "restart 1, pid 11"}}},
		{"exit, restart and healthy between two looks", []replicastate.Replica{rep(0, 10, serving, 0, ""), rep(1, 20, serving, 0, "")},
			[]replicastate.Replica{rep(0, 11, serving, 1, "signal: killed"), rep(1, 20, serving, 0, "")},
			[]Event{
				{at, "replica-0", EventExit, "pid 10: signal: killed"},
				{at, "replica-0", EventRestart, "restart 1, pid 11"},
				{at, "replica-0", EventHealthy, "pid 11 serving on port 8000"},
			}},
		{"restarted and died again", []replicastate.Replica{rep(0, 10, serving, 0, "")}, []replicastate.Replica{rep(0, 11, exited, 1, "exit status 4")},
			[]Event{
				{at, "replica-0", EventExit, "pid 10"},
				{at, "replica-0", EventRestart, "restart 1, pid 11"},
				{at, "replica-0", EventExit, "pid 11: exit status 4"},
			}},
		{"several restarts missed", []replicastate.Replica{rep(2, 10, starting, 0, "")}, []replicastate.Replica{rep(2, 13, starting, 3, "exit status 4")},
			[]Event{
				{at, "replica-2", EventExit, "pid 10"},
				{at, "replica-2", EventRestart, "restart 3, pid 13 (3 restarts since the last look)"},
			}},
		{"unknown index ignored", nil, []replicastate.Replica{rep(0, 10, serving, 0, "")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stateEvents(tt.prev, tt.cur, at)
			if !slices.Equal(got, tt.want) {
				t.Errorf("stateEvents() =\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

func TestDockerEvent(t *testing.T) {
	const id = "0123456789abcdef0123"
	at := time.Unix(100, 5)
	msg := func(action string, attrs map[string]string) events.Message {
		attrs["name"] = "sim-1"
		return events.Message{Type: events.ContainerEventType, Action: events.Action(action),
			Actor: events.Actor{ID: id, Attributes: attrs}, Time: 100, TimeNano: at.UnixNano()}
	}
	tests := []struct {
		name string
		in   events.Message
		want Event
		ok   bool
	}{
		{"die", msg("die", map[string]string{"exitCode": "137"}), Event{at, "sim-1", EventExit, "exit code 137, id 0123456789ab"}, true},
		{"start", msg("start", map[string]string{}), Event{at, "sim-1", EventStart, "id 0123456789ab"}, true},
		{"healthy", msg("health_status: healthy", map[string]string{}), Event{at, "sim-1", EventHealthy, "id 0123456789ab"}, true},
		{"unhealthy", msg("health_status: unhealthy", map[string]string{}), Event{at, "sim-1", EventUnhealthy, "id 0123456789ab"}, true},
		{"oom", msg("oom", map[string]string{}), Event{at, "sim-1", EventOOM, "id 0123456789ab"}, true},
		{"pause", msg("pause", map[string]string{}), Event{at, "sim-1", EventPause, "id 0123456789ab"}, true},
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
