package gpu

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestNewParams(t *testing.T) {
	if got, want := FaultTypes(), []string{TypeHang, TypeMemoryPressure}; !slices.Equal(got, want) {
		t.Errorf("FaultTypes() = %v, want %v", got, want)
	}
	for _, typ := range FaultTypes() {
		p, err := NewParams(typ)
		if err != nil || p.Type() != typ {
			t.Errorf("NewParams(%q) = %v, %v; want empty params of that type", typ, p, err)
		}
	}
	if _, err := NewParams("gpu.melt"); err == nil || !strings.Contains(err.Error(), "gpu.hang, gpu.memory_pressure") {
		t.Errorf("NewParams(gpu.melt) error = %v, want one naming the known types", err)
	}
}

func TestPressureParamsDecodeDefaultsValidate(t *testing.T) {
	tests := []struct {
		name     string
		json     string
		wantErrs []string // empty: valid
		wantArgs string   // balloon arguments before the token, when valid
	}{
		{name: "gib", json: `{"gib": 4, "vgpu_dir": "/v"}`,
			wantArgs: "gpu-balloon --backend vgpu --gpu 0 --parent-pid 77 --vgpu-dir /v --gib 4"},
		{name: "leave free grows by default", json: `{"leave_free_gib": 0.5, "gpu": 2, "vgpu_dir": "/v"}`,
			wantArgs: "gpu-balloon --backend vgpu --gpu 2 --parent-pid 77 --vgpu-dir /v --leave-free-gib 0.5 --grow"},
		{name: "leave free zero is given", json: `{"leave_free_gib": 0, "vgpu_dir": "/v"}`,
			wantArgs: "gpu-balloon --backend vgpu --gpu 0 --parent-pid 77 --vgpu-dir /v --leave-free-gib 0 --grow"},
		{name: "grow off", json: `{"leave_free_gib": 1, "grow": false, "vgpu_dir": "/v"}`,
			wantArgs: "gpu-balloon --backend vgpu --gpu 0 --parent-pid 77 --vgpu-dir /v --leave-free-gib 1"},
		{name: "cuda", json: `{"gib": 10, "backend": "cuda", "gpu": 1}`,
			wantArgs: "gpu-balloon --backend cuda --gpu 1 --parent-pid 77 --gib 10"},
		{name: "neither size", json: `{"vgpu_dir": "/v"}`, wantErrs: []string{"gib or leave_free_gib: give one"}},
		{name: "both sizes", json: `{"gib": 1, "leave_free_gib": 1, "vgpu_dir": "/v"}`, wantErrs: []string{"not both"}},
		{name: "zero gib", json: `{"gib": 0, "vgpu_dir": "/v"}`, wantErrs: []string{"gib: 0, want more than 0"}},
		{name: "negative leave", json: `{"leave_free_gib": -1, "vgpu_dir": "/v"}`, wantErrs: []string{"leave_free_gib: -1"}},
		{name: "grow with gib", json: `{"gib": 1, "grow": true, "vgpu_dir": "/v"}`, wantErrs: []string{"grow: only with leave_free_gib"}},
		{name: "every problem at once", json: `{"gpu": -1, "backend": "rocm"}`,
			wantErrs: []string{"gib or leave_free_gib", "gpu: -1", `backend: "rocm"`}},
		{name: "vgpu without dir", json: `{"gib": 1}`, wantErrs: []string{"vgpu_dir: required"}},
		{name: "cuda with dir", json: `{"gib": 1, "backend": "cuda", "vgpu_dir": "/v"}`, wantErrs: []string{"vgpu_dir: only with backend vgpu"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := NewParams(TypeMemoryPressure)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.json), raw); err != nil {
				t.Fatal(err)
			}
			p := raw.(*PressureParams).WithDefaults()
			err = p.Validate()
			if len(tt.wantErrs) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v, want nil", err)
				}
				args := p.balloonArgs("0123456789abcdef0123456789abcdef", 77)
				if got, want := args[len(args)-1], "--fault-token=0123456789abcdef0123456789abcdef"; got != want {
					t.Errorf("last argument = %q, want %q", got, want)
				}
				if got := strings.Join(args[:len(args)-1], " "); got != tt.wantArgs {
					t.Errorf("balloon args = %q, want %q", got, tt.wantArgs)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: nil, want errors mentioning %q", tt.wantErrs)
			}
			for _, w := range tt.wantErrs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %q, want it to mention %q", err, w)
				}
			}
			if _, nerr := NewMemoryPressure("p", *raw.(*PressureParams), BalloonOptions{Binary: "x"}); nerr == nil {
				t.Error("NewMemoryPressure accepted invalid params")
			}
		})
	}
}

func TestWithDefaultsLeavesTheOriginal(t *testing.T) {
	p := PressureParams{LeaveFreeGiB: ptr(1.0)}
	q := p.WithDefaults()
	if p.Backend != "" || p.Grow != nil {
		t.Errorf("WithDefaults changed its receiver: %+v", p)
	}
	if q.Backend != BackendVGPU || q.Grow == nil || !*q.Grow {
		t.Errorf("WithDefaults() = %+v, want backend vgpu and grow true", q)
	}
}

func TestHangParamsValidate(t *testing.T) {
	tests := []struct {
		name string
		p    HangParams
		want []string
	}{
		{name: "pid", p: HangParams{PID: 1234}},
		{name: "pid file", p: HangParams{PIDFile: "/run/x.pid"}},
		{name: "state file", p: HangParams{StateFile: "s.json", Replica: 2}},
		{name: "nothing", p: HangParams{}, want: []string{"give exactly one"}},
		{name: "two targets", p: HangParams{PID: 5, PIDFile: "f"}, want: []string{"give exactly one"}},
		{name: "init", p: HangParams{PID: 1}, want: []string{"pid: 1"}},
		{name: "replica without state file", p: HangParams{PID: 5, Replica: 1}, want: []string{"replica: only with state_file"}},
		{name: "negative replica", p: HangParams{StateFile: "s", Replica: -1}, want: []string{"replica: -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("Validate: %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: nil, want errors mentioning %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %q, want it to mention %q", err, w)
				}
			}
			if _, nerr := NewHang("h", tt.p); nerr == nil {
				t.Error("NewHang accepted invalid params")
			}
		})
	}
}

func TestHasArg(t *testing.T) {
	tests := []struct {
		cmdline string
		arg     string
		want    bool
	}{
		{"llmchaos\x00gpu-balloon\x00--fault-token=ab\x00", "--fault-token=ab", true},
		{"llmchaos\x00--fault-token=ab", "--fault-token=ab", true},
		{"llmchaos\x00--fault-token=abc\x00", "--fault-token=ab", false},
		{"llmchaos\x00x--fault-token=ab\x00", "--fault-token=ab", false},
		{"", "--fault-token=ab", false},
	}
	for _, tt := range tests {
		if got := hasArg([]byte(tt.cmdline), []byte(tt.arg)); got != tt.want {
			t.Errorf("hasArg(%q, %q) = %v, want %v", tt.cmdline, tt.arg, got, tt.want)
		}
	}
}

func TestTokens(t *testing.T) {
	a, err := newToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newToken()
	if !tokenRE.MatchString(a) || a == b {
		t.Errorf("tokens %q and %q: want two different 32-hex-digit tokens", a, b)
	}
	s, err := tokenRevertSpec(a, "n")
	if err != nil || s.Kind != KindBalloonToken {
		t.Fatalf("tokenRevertSpec = %+v, %v", s, err)
	}
	var ts TokenSpec
	if err := json.Unmarshal(s.Data, &ts); err != nil || ts.Token != a || ts.Name != "n" {
		t.Errorf("spec data %s, want token %s and name n", s.Data, a)
	}
	if _, ok := Reverters()[KindBalloonToken]; !ok {
		t.Error("Reverters() lacks KindBalloonToken")
	}
}
