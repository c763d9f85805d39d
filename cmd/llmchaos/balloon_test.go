package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

func TestBalloonFlagErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "nothing", args: nil, want: []string{"--vgpu-dir", "--gib or --leave-free-gib"}},
		{name: "both sizes", args: []string{"--vgpu-dir", "d", "--gib", "1", "--leave-free-gib", "1"}, want: []string{"not both"}},
		{name: "zero gib", args: []string{"--vgpu-dir", "d", "--gib", "0"}, want: []string{"--gib 0"}},
		{name: "negative leave", args: []string{"--vgpu-dir", "d", "--leave-free-gib", "-1"}, want: []string{"--leave-free-gib -1"}},
		{name: "grow without leave", args: []string{"--vgpu-dir", "d", "--gib", "1", "--grow"}, want: []string{"--grow needs --leave-free-gib"}},
		{name: "negative gpu", args: []string{"--vgpu-dir", "d", "--gib", "1", "--gpu", "-2"}, want: []string{"--gpu -2"}},
		{name: "bad size", args: []string{"--vgpu-dir", "d", "--gib", "1", "--gpu-memory", "x"}, want: []string{"--gpu-memory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := execute(context.Background(), append([]string{"gpu-balloon"}, tt.args...), &out, &errb)
			if code != exitcode.Usage {
				t.Fatalf("exit code = %d, want %d; stderr %q", code, exitcode.Usage, errb.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr = %q, want it to mention %q", errb.String(), w)
				}
			}
		})
	}
}

func TestBalloonHoldsUntilTerminated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := vgpu.Open(dir, 1, 10*vgpu.GiB)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := startCmd(t, "gpu-balloon", "--vgpu-dir", dir, "--gpu", "1", "--gib", "4")
	waitOutput(t, s.out, regexp.MustCompile(`holding 4\.0 GiB on vgpu 1 \(free now 6\.0 GiB\)`), s.done)
	if free, _ := d.Free(); free != 6*vgpu.GiB {
		t.Errorf("free while the balloon holds = %d, want %d", free, 6*vgpu.GiB)
	}
	if code := s.stop(t); code != exitcode.OK {
		t.Errorf("exit code after termination = %d, want %d; stderr:\n%s", code, exitcode.OK, s.err)
	}
	if free, _ := d.Free(); free != 10*vgpu.GiB {
		t.Errorf("free after the balloon ended = %d, want %d", free, 10*vgpu.GiB)
	}
}

func TestBalloonLeaveFree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startCmd(t, "gpu-balloon", "--vgpu-dir", dir, "--gpu-memory", "8GiB", "--leave-free-gib", "0.5")
	waitOutput(t, s.out, regexp.MustCompile(`holding 7\.5 GiB on vgpu 0 \(free now 512\.0 MiB\)`), s.done)
	if code := s.stop(t); code != exitcode.OK {
		t.Errorf("exit code = %d, want %d", code, exitcode.OK)
	}
}

func TestBalloonTooLittleFree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"gpu-balloon", "--vgpu-dir", dir, "--gpu-memory", "8GiB", "--gib", "9"}, &out, &errb)
	if code != exitcode.NoGPUMemory {
		t.Fatalf("exit code = %d, want %d; stderr %q", code, exitcode.NoGPUMemory, errb.String())
	}
	if !strings.Contains(errb.String(), "need 9.0 GiB, free 8.0 GiB of 8.0 GiB") {
		t.Errorf("stderr = %q, want the numbers", errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout = %q, want nothing (no holding line when nothing is held)", out.String())
	}
	code = execute(context.Background(), []string{"gpu-balloon", "--vgpu-dir", t.TempDir(), "--gib", "1"}, &out, &errb)
	if code == exitcode.OK || !strings.Contains(errb.String(), "no capacity") {
		t.Errorf("balloon on an unrecorded vGPU without --gpu-memory: exit %d, stderr %q; want a failure naming the missing capacity", code, errb.String())
	}
}
