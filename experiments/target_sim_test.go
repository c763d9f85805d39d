package experiments

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

// TestConcurrentSimTargetsNeverShareAPort starts the simulators of two runs
// at once, as two `llmchaos run` in parallel would: every replica gets its
// own port (the supervisor binds port 0 and publishes what it got; nothing
// is probed and released), serves on it, and the runner's endpoints are the
// ports of the state file.
func TestConcurrentSimTargetsNeverShareAPort(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts two simulators of 3 replica processes each; skipped under -short")
	}
	binDir := t.TempDir()
	if err := testutil.BuildLLMChaos(binDir); err != nil {
		t.Fatal(err)
	}
	bin := testutil.BinPath(binDir)
	const runs = 2
	target := spec.SimTarget{Replicas: 3, StartupTime: spec.Duration(100 * time.Millisecond)}.WithDefaults(1)
	args, err := simArgs(target, spec.SimEnv{StateFile: "s.json", VGPUDir: "v"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(flagValues(args, "--base-port"), []string{"0"}) || !slices.Equal(flagValues(args, "--listen"), []string{"127.0.0.1:0"}) {
		t.Fatalf("simulator args %q: want --listen 127.0.0.1:0 --base-port 0 (ports the supervisor binds), not probed ports", args)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	type started struct {
		sp  *simProcess
		jr  *faults.Journal
		err error
	}
	got := make([]started, runs)
	var wg sync.WaitGroup
	for i := range got {
		dir := t.TempDir()
		wg.Go(func() {
			jr, err := faults.Open(dir)
			if err != nil {
				got[i].err = err
				return
			}
			got[i].jr = jr
			got[i].sp, got[i].err = startSim(ctx, target, dir, bin, jr)
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, g := range got {
			if g.sp != nil {
				if err := g.sp.stop(context.Background()); err != nil {
					t.Errorf("stop: %v", err)
				}
			}
			if g.jr != nil {
				g.jr.Close()
			}
		}
	})
	for i, g := range got {
		if g.err != nil {
			t.Fatalf("run %d: start the simulator: %v", i, g.err)
		}
	}

	owner := map[string]int{} // host:port → run
	client := &http.Client{Timeout: 5 * time.Second}
	for i, g := range got {
		rs, err := replicastate.Read(g.sp.env.StateFile)
		if err != nil {
			t.Fatal(err)
		}
		eps := g.sp.endpoints()
		if len(eps) != target.Replicas || len(rs) != target.Replicas {
			t.Fatalf("run %d: %d endpoints and %d replicas in the state file, want %d", i, len(eps), len(rs), target.Replicas)
		}
		for j, ep := range eps {
			u, err := url.Parse(ep)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("127.0.0.1:%d", rs[j].Port); u.Host != want {
				t.Errorf("run %d endpoint %d = %s, want the state file's %s", i, j, ep, want)
			}
			if other, dup := owner[u.Host]; dup {
				t.Errorf("runs %d and %d both have a replica on %s", other, i, u.Host)
			}
			owner[u.Host] = i
			resp, err := client.Get("http://" + u.Host + "/health")
			if err != nil {
				t.Errorf("run %d replica %d: %v", i, j, err)
				continue
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("run %d replica %d: /health answered %d, want 200", i, j, resp.StatusCode)
			}
		}
	}
}

// flagValues returns the values given to flag in args.
func flagValues(args []string, flag string) []string {
	var out []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			out = append(out, args[i+1])
		}
	}
	return out
}
