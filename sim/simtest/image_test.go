package simtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/testutil"
)

// docker runs the Docker CLI and returns its trimmed output.
func docker(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		return s, fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, s)
	}
	return s, nil
}

// TestImageServesCompletions builds deploy/Dockerfile from the static binary
// and runs a replica container with the image's default command.
func TestImageServesCompletions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a Docker image; skipped under -short")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker CLI on PATH: ", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	probe, probeCancel := context.WithTimeout(ctx, 15*time.Second)
	_, err := docker(probe, "version", "--format", "{{.Server.Version}}")
	probeCancel()
	if err != nil {
		t.Skip("no Docker engine answers: ", err)
	}

	dockerfile, err := filepath.Abs(filepath.Join("..", "..", "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("llmchaos-simtest:%d", os.Getpid())
	// The context is the folder holding bin/llmchaos, as the repository
	// root is for `make image`.
	if out, err := docker(ctx, "build", "-q", "-f", dockerfile, "-t", tag, binDir); err != nil {
		t.Fatalf("build image: %v\n%s", err, out)
	}
	t.Cleanup(func() { docker(context.Background(), "rmi", "-f", tag) })

	id, err := docker(ctx, "run", "-d", "-p", "127.0.0.1::8000", tag)
	if err != nil {
		t.Fatalf("run container: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := docker(context.Background(), "logs", id)
			t.Logf("container logs:\n%s", logs)
		}
		docker(context.Background(), "rm", "-f", id)
	})
	port, err := docker(ctx, "port", id, "8000/tcp")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`127\.0\.0\.1:(\d+)`).FindStringSubmatch(port)
	if m == nil {
		t.Fatalf("docker port = %q, want a 127.0.0.1 binding", port)
	}
	addr := "127.0.0.1:" + m[1]
	// The image's default --startup-time is 5 s of 503s.
	testutil.WaitFor(t, 60*time.Second, "the container's /health to answer 200", func() bool { return healthCode(addr) == 200 })
	res := testutil.Stream(ctx, addr, 8, nil)
	if res.Err != nil || res.Status != 200 || !res.Done || res.Chunks != 8 {
		t.Errorf("stream from the container = %+v, want status 200, 8 chunks and [DONE]", res)
	}
}
