package replica

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/llmchaos/llmchaos/faults"
)

// wantProblems checks that err mentions every one of want (nil: no error).
func wantProblems(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("Validate() = %v, want nil", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("Validate() = nil, want an error mentioning %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() = %q\nwant it to mention %q", err, w)
		}
	}
}

func TestKillParamsValidate(t *testing.T) {
	t.Parallel()
	state := TargetParams{StateFile: "state.json"}
	tests := []struct {
		name string
		p    KillParams
		want []string
	}{
		{"defaults", KillParams{Params: Params{Target: state}}, nil},
		{"docker via engine", KillParams{Params: Params{Target: TargetParams{Driver: DriverDocker, Labels: map[string]string{"app": "sim"}}}, Via: ViaEngine, Signal: "9"}, nil},
		{"every problem at once", KillParams{
			Params: Params{Target: TargetParams{StateFile: "s.json", PIDFile: "p.pid", Labels: map[string]string{"a": "b"}},
				Select: faults.Selection{Mode: faults.SelectCount, MinAvailable: -1}},
			Signal: "SIGNOPE", Via: ViaEngine,
		}, []string{
			"exactly one of state_file, pid_file and cmdline, got 2",
			"labels and containers are for the docker driver",
			"select.value: 0, mode count needs at least 1",
			"select.min_available: -1",
			`signal: "SIGNOPE" is not a signal name`,
			"via: engine is for the docker and kubernetes drivers, not process",
		}},
		{"bad regexp", KillParams{Params: Params{Target: TargetParams{Cmdline: "sim ("}}}, []string{"target.cmdline: error parsing regexp"}},
		{"unknown driver", KillParams{Params: Params{Target: TargetParams{Driver: "k8s"}}}, []string{`target.driver: "k8s", want process, docker or kubernetes`}},
		{"docker without selector", KillParams{Params: Params{Target: TargetParams{Driver: DriverDocker, PIDFile: "x"}}},
			[]string{"docker driver needs labels or containers", "are for the process driver, not docker"}},
		{"bad via", KillParams{Params: Params{Target: state}, Via: "ssh"}, []string{`via: "ssh", want process or engine`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantProblems(t, tt.p.WithDefaults().Validate(), tt.want)
		})
	}
}

func TestOtherParamsValidate(t *testing.T) {
	t.Parallel()
	state := Params{Target: TargetParams{StateFile: "state.json"}}
	cmdline := Params{Target: TargetParams{Cmdline: "sim"}}
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"stop defaults", StopParams{Params: state}.WithDefaults().Validate(), nil},
		{"stop negative grace", StopParams{Params: state, Grace: -time.Second}.WithDefaults().Validate(), []string{"grace: -1s, want more than 0"}},
		{"pause defaults", PauseParams{Params: cmdline}.WithDefaults().Validate(), nil},
		{"pause no target", PauseParams{}.WithDefaults().Validate(), []string{"exactly one of state_file, pid_file and cmdline, got 0"}},
		{"restart defaults", RestartParams{Params: state}.WithDefaults().Validate(), nil},
		{"restart cmdline and bad timeout", RestartParams{Params: cmdline, Timeout: -1}.WithDefaults().Validate(),
			[]string{"timeout: -1ns, want more than 0", "replica.restart with the process driver needs state_file or pid_file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantProblems(t, tt.err, tt.want) })
	}
}

func TestWithDefaultsDoesNotValidateAndValidateDoesNotFill(t *testing.T) {
	t.Parallel()
	p := KillParams{Params: Params{Target: TargetParams{StateFile: "s"}}}
	if err := p.Validate(); err == nil {
		t.Error("Validate() without WithDefaults = nil, want errors for the empty driver and mode")
	}
	if p.Signal != "" || p.Target.Driver != "" {
		t.Errorf("Validate() filled defaults: %+v", p)
	}
	got := p.WithDefaults()
	if got.Signal != DefaultKillSignal || got.Via != ViaProcess || got.Target.Driver != DriverProcess || got.Select.Mode != faults.SelectOne {
		t.Errorf("WithDefaults() = %+v, want signal %s, via process, driver process, mode one", got, DefaultKillSignal)
	}
}

func TestParamsDecodeFromJSON(t *testing.T) {
	t.Parallel()
	in := `{"target":{"driver":"docker","labels":{"app":"sim"}},"select":{"mode":"count","value":2,"min_available":1},"signal":"SIGTERM","via":"engine"}`
	var p KillParams
	if err := json.Unmarshal([]byte(in), &p); err != nil {
		t.Fatal(err)
	}
	want := KillParams{
		Params: Params{Target: TargetParams{Driver: DriverDocker, Labels: map[string]string{"app": "sim"}},
			Select: faults.Selection{Mode: faults.SelectCount, Value: 2, MinAvailable: 1}},
		Signal: "SIGTERM", Via: ViaEngine,
	}
	if got, _ := json.Marshal(p); string(got) != mustJSON(t, want) {
		t.Errorf("decoded %s, want %s", got, mustJSON(t, want))
	}
	if err := p.WithDefaults().Validate(); err != nil {
		t.Errorf("Validate() = %v", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseSignal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    syscall.Signal
		wantErr bool
	}{
		{"SIGKILL", syscall.SIGKILL, false},
		{"kill", syscall.SIGKILL, false},
		{" sigterm ", syscall.SIGTERM, false},
		{"15", syscall.SIGTERM, false},
		{"SIGSTOP", syscall.SIGSTOP, false},
		{"SIGFOO", 0, true},
		{"0", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSignal(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseSignal(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
	if got := SignalName(syscall.SIGKILL); got != "SIGKILL" {
		t.Errorf("SignalName(SIGKILL) = %q, want SIGKILL", got)
	}
}

func TestTargetString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		t    TargetParams
		want string
	}{
		{TargetParams{StateFile: "/run/s.json"}, "state file /run/s.json"},
		{TargetParams{Cmdline: "vllm serve"}, `processes matching "vllm serve"`},
		{TargetParams{Driver: DriverDocker, Labels: map[string]string{"b": "2", "a": "1"}, Containers: []string{"x"}}, "docker labels a=1,b=2 containers x"},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// The params decode from an experiment file's YAML as the loader decodes
// them (strict: an unknown key is an error).
func TestParamsDecodeFromYAML(t *testing.T) {
	t.Parallel()
	in := `
target: {driver: process, state_file: /run/sim-state.json}
select: {mode: percent, value: 50, min_available: 1}
grace: 2s
timeout: 30s
`
	var p RestartParams
	if err := yaml.UnmarshalWithOptions([]byte(in), &p, yaml.DisallowUnknownField()); err != nil {
		t.Fatal(err)
	}
	want := RestartParams{
		Params: Params{Target: TargetParams{Driver: DriverProcess, StateFile: "/run/sim-state.json"},
			Select: faults.Selection{Mode: faults.SelectPercent, Value: 50, MinAvailable: 1}},
		Grace: 2 * time.Second, Timeout: 30 * time.Second,
	}
	if got := mustJSON(t, p); got != mustJSON(t, want) {
		t.Errorf("decoded %s, want %s", got, mustJSON(t, want))
	}
	var k KillParams
	err := yaml.UnmarshalWithOptions([]byte("target: {state_file: s}\nsignl: TERM\n"), &k, yaml.DisallowUnknownField())
	if err == nil || !strings.Contains(err.Error(), "signl") {
		t.Errorf("decode with a misspelt key = %v, want an error naming it", err)
	}
}

func TestOrStateFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   TargetParams
		want string
	}{
		{"left out", TargetParams{}, "sim.json"},
		{"process driver named", TargetParams{Driver: DriverProcess}, "sim.json"},
		{"pid file kept", TargetParams{PIDFile: "x.pid"}, ""},
		{"docker kept", TargetParams{Driver: DriverDocker}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.OrStateFile("sim.json").StateFile; got != tt.want {
				t.Errorf("OrStateFile().StateFile = %q, want %q", got, tt.want)
			}
		})
	}
}
