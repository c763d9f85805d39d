package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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

// TestBalloonHoldsUntilTerminated: the balloon holds until SIGTERM; its
// --ready-file holds the holding line while it holds (is-holding, the
// balloon pod's readiness probe, exits 0), and is gone once it released
// (is-holding fails).
func TestBalloonHoldsUntilTerminated(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := vgpu.Open(dir, 1, 10*vgpu.GiB)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ready := filepath.Join(t.TempDir(), "holding")
	isHolding := func() int {
		var out, errb bytes.Buffer
		return execute(context.Background(), []string{"gpu-balloon", "is-holding", ready}, &out, &errb)
	}
	s := startCmd(t, "gpu-balloon", "--vgpu-dir", dir, "--gpu", "1", "--gib", "4", "--ready-file", ready)
	waitOutput(t, s.out, regexp.MustCompile(`holding 4\.0 GiB on vgpu 1 \(free now 6\.0 GiB\)`), s.done)
	if free, _ := d.Free(); free != 6*vgpu.GiB {
		t.Errorf("free while the balloon holds = %d, want %d", free, 6*vgpu.GiB)
	}
	// The file is written after the line is printed: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for isHolding() != exitcode.OK && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if b, err := os.ReadFile(ready); err != nil || string(b) != "holding 4.0 GiB on vgpu 1 (free now 6.0 GiB)\n" {
		t.Errorf("--ready-file while holding: %q, %v; want the holding line", b, err)
	}
	if code := s.stop(t); code != exitcode.OK {
		t.Errorf("exit code after termination = %d, want %d; stderr:\n%s", code, exitcode.OK, s.err)
	}
	if free, _ := d.Free(); free != 10*vgpu.GiB {
		t.Errorf("free after the balloon ended = %d, want %d", free, 10*vgpu.GiB)
	}
	if code := isHolding(); code == exitcode.OK {
		t.Error("is-holding after the release: exit 0, want a failure")
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
	ready := filepath.Join(t.TempDir(), "holding")
	code := execute(context.Background(), []string{"gpu-balloon", "--vgpu-dir", dir, "--gpu-memory", "8GiB", "--gib", "9", "--ready-file", ready}, &out, &errb)
	if code != exitcode.NoGPUMemory {
		t.Fatalf("exit code = %d, want %d; stderr %q", code, exitcode.NoGPUMemory, errb.String())
	}
	if !strings.Contains(errb.String(), "need 9.0 GiB, free 8.0 GiB of 8.0 GiB") {
		t.Errorf("stderr = %q, want the numbers", errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("stdout = %q, want nothing (no holding line when nothing is held)", out.String())
	}
	if _, err := os.Stat(ready); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("--ready-file of a balloon that holds nothing: %v, want none", err)
	}
	code = execute(context.Background(), []string{"gpu-balloon", "--vgpu-dir", t.TempDir(), "--gib", "1"}, &out, &errb)
	if code == exitcode.OK || !strings.Contains(errb.String(), "no capacity") {
		t.Errorf("balloon on an unrecorded vGPU without --gpu-memory: exit %d, stderr %q; want a failure naming the missing capacity", code, errb.String())
	}
}
