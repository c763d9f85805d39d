package experiments

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// shardRunnerEnv makes this test binary the runner of
// TestLocalShardsDieWithTheirRunner: it starts local shards recorded in
// the journal of the directory the variable names, then waits to be
// killed.
const shardRunnerEnv = "LLMCHAOS_TEST_SHARD_RUNNER_DIR"

// TestLocalShardsDieWithTheirRunner: a runner with local shard processes
// is killed with SIGKILL. Each shard was recorded in the journal (so that
// recover can end one), and each dies with its runner at once (a
// parent-death signal): polling /proc finds none alive within a bounded
// wait, though each would otherwise run for minutes.
func TestLocalShardsDieWithTheirRunner(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv(shardRunnerEnv); dir != "" {
		beShardRunner(t, dir)
		return
	}
	dir := t.TempDir()
	runner := exec.Command(os.Args[0], "-test.run=^TestLocalShardsDieWithTheirRunner$", "-test.v")
	runner.Env = append(os.Environ(), shardRunnerEnv+"="+dir)
	var out bytes.Buffer
	runner.Stdout, runner.Stderr = &out, &out
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = runner.Wait(); close(exited) }()
	defer func() {
		_ = runner.Process.Kill()
		<-exited
	}()
	var shards []faults.ProcessSpec
	deadline := time.Now().Add(60 * time.Second)
	for len(shards) < 2 {
		shards = shardSpecs(t, filepath.Join(dir, faults.JournalFile))
		if time.Now().After(deadline) {
			t.Fatalf("the journal does not record the 2 shards within 60s (%d); runner output:\n%s", len(shards), out.String())
		}
		select {
		case <-exited:
			t.Fatalf("the runner exited early:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	for _, s := range shards {
		if _, alive, err := faults.ProcessStartTime(s.PID); err != nil || !alive {
			t.Fatalf("shard %+v not running before the kill (%v)", s, err)
		}
	}
	if err := runner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	deadline = time.Now().Add(10 * time.Second)
	for _, s := range shards {
		for {
			start, alive, err := faults.ProcessStartTime(s.PID)
			if err == nil && (!alive || start != s.StartTime) {
				break
			}
			if time.Now().After(deadline) {
				_ = syscall.Kill(s.PID, syscall.SIGKILL)
				t.Fatalf("shard %+v still runs 10s after its runner was killed", s)
			}
			time.Sleep(10 * time.Millisecond) // bounded by deadline
		}
	}
	// What the journal holds, recover can end: nothing of it is left.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := faults.Recover(ctx, dir, faults.BuiltinReverters()); err != nil {
		t.Errorf("recover: %v", err)
	}
}

// beShardRunner is the runner's side: two local shards of a program that
// runs for minutes, recorded in dir's journal; then it waits to be killed.
func beShardRunner(t *testing.T, dir string) {
	bin := filepath.Join(dir, "shard.sh")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexec sleep 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	jr, err := faults.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	shards := &LocalShards{Binary: bin}
	if err := shards.Start(context.Background(), jr, []string{"--rate", "1"}, 2, time.Now(), func(int, []byte) {}); err != nil {
		t.Fatal(err)
	}
	fmt.Println("shards started")
	time.Sleep(5 * time.Minute) // killed by the test long before
}

// shardSpecs reads the process specs of the shards recorded in a journal.
func shardSpecs(t *testing.T, path string) []faults.ProcessSpec {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []faults.ProcessSpec
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var r struct {
			Op   string             `json:"op"`
			Spec *faults.RevertSpec `json:"spec"`
		}
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Op != "will" || r.Spec == nil || r.Spec.Kind != faults.KindProcess {
			continue
		}
		var s faults.ProcessSpec
		if json.Unmarshal(r.Spec.Data, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}
