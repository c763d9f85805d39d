package replica

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/testutil"
)

// dockerEngine returns a client of the local engine, or skips the test with
// the reason when none answers.
func dockerEngine(t *testing.T) *client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("builds an image and runs containers; skipped under -short")
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Skip("no Docker client: ", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		t.Skip("no Docker engine answers: ", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// buildImage builds deploy/Dockerfile (FROM scratch) around the static
// binary TestMain built, as `make image` does, and removes it at the end.
func buildImage(t *testing.T, ctx context.Context, cli *client.Client, tag string) {
	t.Helper()
	dockerfile, err := os.ReadFile(filepath.Join("..", "..", "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(llmchaosBin())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, dockerfile}, {"bin/llmchaos", 0o755, bin}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{Tags: []string{tag}, Dockerfile: "Dockerfile", Remove: true, ForceRemove: true})
	if err != nil {
		t.Fatalf("build image: %v", err)
	}
	defer res.Body.Close()
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
	// The build's outcome is in its message stream.
	var log strings.Builder
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var m struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			log.WriteString(m.Stream)
			if m.Error != "" {
				t.Fatalf("build image: %s\n%s", m.Error, log.String())
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("build image: %v", err)
	}
}

// runReplica creates (and, if start, starts) a simulator container with
// labels, restart policy on-failure, publishing 8000 to a random port of
// 127.0.0.1. It is removed at the end.
func runReplica(t *testing.T, ctx context.Context, cli *client.Client, image, name string, labels map[string]string, start bool) string {
	t.Helper()
	port := network.MustParsePort("8000/tcp")
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image:        image,
			Labels:       labels,
			Cmd:          []string{"sim", "--listen", "0.0.0.0:8000", "--startup-time", "0s", "--latency", "constant", "--ttft", "10ms", "--itl", "10ms"},
			ExposedPorts: network.PortSet{port: {}},
		},
		HostConfig: &container.HostConfig{
			RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyOnFailure},
			PortBindings:  network.PortMap{port: {{HostIP: netip.MustParseAddr("127.0.0.1")}}},
		},
	})
	if err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	t.Cleanup(func() {
		cli.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true})
	})
	if start {
		if _, err := cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
			t.Fatalf("start container %s: %v", name, err)
		}
	}
	return res.ID
}

// inspect returns the container's state.
func inspect(t *testing.T, ctx context.Context, cli *client.Client, id string) container.InspectResponse {
	t.Helper()
	res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspect %s: %v", id, err)
	}
	return res.Container
}

// replicaAddr returns the 127.0.0.1 address the container's port 8000 is
// published on now ("" while it has none).
func replicaAddr(t *testing.T, ctx context.Context, cli *client.Client, id string) string {
	t.Helper()
	c := inspect(t, ctx, cli, id)
	if c.NetworkSettings == nil {
		return ""
	}
	for _, b := range c.NetworkSettings.Ports[network.MustParsePort("8000/tcp")] {
		if b.HostPort != "" {
			return "127.0.0.1:" + b.HostPort
		}
	}
	return ""
}

func healthy(addr string) bool {
	if addr == "" {
		return false
	}
	return testutil.HealthCode(addr, time.Second) == http.StatusOK
}

// TestDockerDriver runs three labelled simulator containers and one that
// did not opt in, and kills, pauses, restarts and stops them through the
// docker driver.
func TestDockerDriver(t *testing.T) {
	cli := dockerEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	image := "llmchaos-replica-test:" + run
	buildImage(t, ctx, cli, image)

	const runLabel = "llmchaos.test/run"
	ids := make([]string, 3)
	names := make([]string, 3)
	for i := range ids {
		names[i] = fmt.Sprintf("llmchaos-replica-test-%s-%d", run, i)
		ids[i] = runReplica(t, ctx, cli, image, names[i], map[string]string{OptInLabel: OptInLabelValue, runLabel: run}, true)
	}
	bare := "llmchaos-replica-test-" + run + "-bare"
	runReplica(t, ctx, cli, image, bare, map[string]string{runLabel: run + "-bare"}, false)
	t.Cleanup(func() {
		if t.Failed() {
			for _, id := range ids {
				logs, err := cli.ContainerLogs(context.Background(), id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
				if err == nil {
					b, _ := io.ReadAll(logs)
					logs.Close()
					t.Logf("logs of %s:\n%s", id[:12], b)
				}
			}
		}
	})
	for i, id := range ids {
		testutil.WaitFor(t, 30*time.Second, names[i]+" /health 200", func() bool { return healthy(replicaAddr(t, ctx, cli, id)) })
	}
	target := TargetParams{Driver: DriverDocker, Labels: map[string]string{runLabel: run}}
	byName := map[string]int{}
	for i, n := range names {
		byName[n] = i
	}

	t.Run("targets", func(t *testing.T) {
		d, err := NewDocker(target)
		if err != nil {
			t.Fatal(err)
		}
		ts, err := d.Targets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tg := range ts {
			if !tg.Up || tg.Container != ids[byName[tg.ID]] {
				t.Errorf("target %+v, want up with id %s", tg, ids[byName[tg.ID]])
			}
			got = append(got, tg.ID)
		}
		if !slices.Equal(got, names) {
			t.Errorf("targets %v, want %v", got, names)
		}
	})

	t.Run("refuses a container without the opt-in label", func(t *testing.T) {
		for _, tp := range []TargetParams{
			{Driver: DriverDocker, Labels: map[string]string{runLabel: run + "-bare"}},
			{Driver: DriverDocker, Containers: []string{names[0], bare}},
		} {
			k, err := NewKill("k", KillParams{Params: Params{Target: tp}}, testRand(1))
			if err != nil {
				t.Fatal(err)
			}
			_, err = k.Inject(ctx, faults.NopLog{})
			if !errors.Is(err, ErrNotOptedIn) {
				t.Fatalf("kill of %s = %v, want ErrNotOptedIn", tp, err)
			}
			for _, w := range []string{`container "` + bare + `"`, "llmchaos.io/target=true"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		}
		if st := inspect(t, ctx, cli, ids[0]).State; !st.Running || st.Restarting {
			t.Errorf("%s state %+v after a refused kill, want running", names[0], st)
		}
	})

	t.Run("kill is restarted by docker", func(t *testing.T) {
		w, err := OpenWatcher(target)
		if err != nil {
			t.Fatal(err)
		}
		evs := startWatch(t, w)
		var hit Target
		k, err := NewKill("crash", KillParams{Params: Params{Target: target, Select: faults.Selection{MinAvailable: 2}}}, testRand(7),
			OnApplied(func(t Target) { hit = t }))
		if err != nil {
			t.Fatal(err)
		}
		log := &recLog{}
		undo, err := k.Inject(ctx, log)
		if err != nil {
			t.Fatal(err)
		}
		i := byName[hit.ID]
		testutil.WaitFor(t, 30*time.Second, hit.ID+" restarted by docker", func() bool {
			c := inspect(t, ctx, cli, ids[i])
			return c.RestartCount == 1 && c.State.Running
		})
		testutil.WaitFor(t, 30*time.Second, hit.ID+" /health 200 again", func() bool { return healthy(replicaAddr(t, ctx, cli, ids[i])) })
		if err := undo(ctx); err != nil {
			t.Errorf("kill's Undo after docker restarted it = %v, want nil", err)
		}
		if c := inspect(t, ctx, cli, ids[i]); c.RestartCount != 1 || !c.State.Running {
			t.Errorf("%s after Undo: restarts %d, state %+v; want running, restarted once (by docker, not by the Undo)", hit.ID, c.RestartCount, c.State)
		}
		testutil.WaitFor(t, 10*time.Second, "die and start events", func() bool { return len(kinds(evs.events(), hit.ID)) >= 2 })
		if got := kinds(evs.events(), hit.ID); !slices.Equal(got[:2], []EventKind{EventExit, EventStart}) {
			t.Errorf("events of %s = %v, want exit (die) then start", hit.ID, evs.events())
		}
		if e := evs.events()[0]; !strings.HasPrefix(e.Detail, "exit code 137") {
			t.Errorf("die event detail = %q, want exit code 137 (SIGKILL)", e.Detail)
		}
		for j, id := range ids {
			if j != i && inspect(t, ctx, cli, id).RestartCount != 0 {
				t.Errorf("%s restarted too", names[j])
			}
		}
		specs := log.all()
		var done DockerSpec
		if len(specs) != 1 || specs[0].Kind != KindDockerStart || json.Unmarshal(specs[0].Data, &done) != nil || done.ID != ids[i] || done.PID == 0 {
			t.Errorf("journal specs = %v, want one %s naming the container and its pid", specs, KindDockerStart)
		}
	})

	t.Run("pause stalls and undo resumes", func(t *testing.T) {
		sctx, scancel := context.WithTimeout(ctx, 40*time.Second)
		defer scancel()
		streams := make([]*stream, len(ids))
		for i, id := range ids {
			streams[i] = startStream(sctx, replicaAddr(t, ctx, cli, id))
		}
		for _, s := range streams {
			s.waitFirst(t)
		}
		var hit Target
		p, err := NewPause("freeze", PauseParams{Params: Params{Target: target}}, testRand(3), OnApplied(func(t Target) { hit = t }))
		if err != nil {
			t.Fatal(err)
		}
		log := &recLog{}
		undo, err := p.Inject(ctx, log)
		if err != nil {
			t.Fatal(err)
		}
		i := byName[hit.ID]
		if st := inspect(t, ctx, cli, ids[i]).State; !st.Paused {
			t.Fatalf("%s state %+v after pause, want paused", hit.ID, st)
		}
		streams[i].quietFor(100 * time.Millisecond) // let chunks in flight land
		if quiet, n := streams[i].quietFor(300 * time.Millisecond); !quiet {
			t.Errorf("stream of the paused container got %d tokens in 300ms, want none", n)
		}
		// A second without a token is a stall; shorter gaps are a busy
		// machine's (see TestProcessPauseStallsThenResumes).
		for j, s := range streams {
			if j == i {
				continue
			}
			if quiet, _ := s.quietFor(time.Second); quiet {
				t.Errorf("stream of %s (not paused) stalled too: no token in 1s", names[j])
			}
		}
		if err := undo(ctx); err != nil {
			t.Fatal(err)
		}
		if err := undo(ctx); err != nil {
			t.Errorf("second Undo = %v, want nil", err)
		}
		n := streams[i].chunks.Load()
		testutil.WaitFor(t, 10*time.Second, "tokens to flow again after unpause", func() bool { return streams[i].chunks.Load() > n+10 })

		// The journal's spec alone unpauses it, as `llmchaos recover` would.
		specs := log.all()
		if len(specs) != 1 || specs[0].Kind != KindDockerUnpause {
			t.Fatalf("journal specs = %v, want one %s", specs, KindDockerUnpause)
		}
		if _, err := cli.ContainerPause(ctx, ids[i], client.ContainerPauseOptions{}); err != nil {
			t.Fatal(err)
		}
		rev := Reverters()[KindDockerUnpause]
		for range 2 {
			if err := rev(ctx, specs[0].Data); err != nil {
				t.Fatalf("reverter from the spec: %v", err)
			}
			if st := inspect(t, ctx, cli, ids[i]).State; st.Paused || !st.Running {
				t.Errorf("%s state %+v after the reverter, want running", hit.ID, st)
			}
		}
		gone, _ := json.Marshal(DockerSpec{ID: strings.Repeat("f", 64), Name: "gone"})
		if err := rev(ctx, gone); err != nil {
			t.Errorf("reverter of a container that is gone = %v, want nil", err)
		}
	})

	t.Run("restart", func(t *testing.T) {
		var hit Target
		r, err := NewRestart("bounce", RestartParams{Params: Params{Target: TargetParams{Driver: DriverDocker, Containers: []string{names[2]}}}, Grace: time.Second},
			testRand(1), OnApplied(func(t Target) { hit = t }))
		if err != nil {
			t.Fatal(err)
		}
		before := inspect(t, ctx, cli, ids[2]).State.StartedAt
		undo, err := r.Inject(ctx, faults.NopLog{})
		if err != nil {
			t.Fatal(err)
		}
		if err := undo(ctx); err != nil {
			t.Errorf("restart's Undo = %v, want nil (it runs)", err)
		}
		st := inspect(t, ctx, cli, ids[2]).State
		if hit.ID != names[2] || !st.Running || st.StartedAt == before {
			t.Errorf("after restart of %s: hit %v, state %+v (started before at %s), want it running, started again", names[2], hit, st, before)
		}
	})

	t.Run("stop is undone by starting it again", func(t *testing.T) {
		s, err := NewStop("halt", StopParams{Params: Params{Target: TargetParams{Driver: DriverDocker, Containers: []string{ids[1][:12]}}}, Grace: time.Second}, testRand(1))
		if err != nil {
			t.Fatal(err)
		}
		log := &recLog{}
		undo, err := s.Inject(ctx, log)
		if err != nil {
			t.Fatal(err)
		}
		if st := inspect(t, ctx, cli, ids[1]).State; st.Running || st.Restarting {
			t.Errorf("%s state %+v after stop, want stopped", names[1], st)
		}
		for range 2 {
			if err := undo(ctx); err != nil {
				t.Fatalf("stop's Undo = %v", err)
			}
			if st := inspect(t, ctx, cli, ids[1]).State; !st.Running {
				t.Errorf("%s state %+v after Undo, want running", names[1], st)
			}
		}
		testutil.WaitFor(t, 30*time.Second, names[1]+" /health 200 after Undo", func() bool { return healthy(replicaAddr(t, ctx, cli, ids[1])) })

		// The journal's spec alone starts it, as `llmchaos recover` would.
		specs := log.all()
		if len(specs) != 1 || specs[0].Kind != KindDockerStart {
			t.Fatalf("journal specs = %v, want one %s", specs, KindDockerStart)
		}
		secs := 1
		if _, err := cli.ContainerStop(ctx, ids[1], client.ContainerStopOptions{Timeout: &secs}); err != nil {
			t.Fatal(err)
		}
		rev := Reverters()[KindDockerStart]
		if err := rev(ctx, specs[0].Data); err != nil {
			t.Fatalf("reverter from the spec: %v", err)
		}
		if st := inspect(t, ctx, cli, ids[1]).State; !st.Running {
			t.Errorf("%s state %+v after the reverter, want running", names[1], st)
		}
		gone, _ := json.Marshal(DockerSpec{ID: strings.Repeat("f", 64), Name: "gone", Action: "stop"})
		if err := rev(ctx, gone); err != nil {
			t.Errorf("reverter of a container that is gone = %v, want nil", err)
		}
	})

	t.Run("kill via engine is undone by starting it again", func(t *testing.T) {
		k, err := NewKill("halt", KillParams{Params: Params{Target: TargetParams{Driver: DriverDocker, Containers: []string{names[0]}}}, Via: ViaEngine}, testRand(1))
		if err != nil {
			t.Fatal(err)
		}
		undo, err := k.Inject(ctx, faults.NopLog{})
		if err != nil {
			t.Fatal(err)
		}
		// Docker's restart policy ignores a kill through the engine.
		testutil.WaitFor(t, 10*time.Second, names[0]+" exited", func() bool { return !inspect(t, ctx, cli, ids[0]).State.Running })
		if err := undo(ctx); err != nil {
			t.Fatalf("kill's Undo = %v", err)
		}
		if st := inspect(t, ctx, cli, ids[0]).State; !st.Running {
			t.Errorf("%s state %+v after Undo, want running", names[0], st)
		}
		testutil.WaitFor(t, 30*time.Second, names[0]+" /health 200 after Undo", func() bool { return healthy(replicaAddr(t, ctx, cli, ids[0])) })
	})

	t.Run("undo fails loudly when the container cannot run", func(t *testing.T) {
		// The opted-in container whose command cannot run: starting it fails.
		id := runBroken(t, ctx, cli, image, "llmchaos-replica-test-"+run+"-broken", map[string]string{OptInLabel: OptInLabelValue})
		data, _ := json.Marshal(DockerSpec{ID: id, Name: "broken", Action: "stop", Timeout: time.Second})
		err := Reverters()[KindDockerStart](ctx, data)
		if err == nil || !strings.Contains(err.Error(), "does not run again") {
			t.Errorf("reverter of a container that cannot start = %v, want an error saying it does not run", err)
		}
	})
}

// runBroken creates a container of image whose command does not exist, so
// it can never be started; it is removed at the end.
func runBroken(t *testing.T, ctx context.Context, cli *client.Client, image, name string, labels map[string]string) string {
	t.Helper()
	res, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:   name,
		Config: &container.Config{Image: image, Labels: labels, Entrypoint: []string{"/no-such-binary"}},
	})
	if err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	t.Cleanup(func() {
		cli.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true})
	})
	return res.ID
}
