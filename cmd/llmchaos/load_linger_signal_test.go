package main

import (
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestLoadLingerEndsOnSignal: llmchaos load --metrics-listen, scraped once
// while it ran, lingers after its end for the final scrape (here up to
// 5 minutes); a SIGTERM, SIGINT or SIGQUIT then (an orchestrator's stop, a
// terminal's Ctrl-C) ends the linger at once, and a signal that ends the
// run itself leaves no linger at all.
func TestLoadLingerEndsOnSignal(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	url := loadSim(t, 2*time.Millisecond, 5*time.Millisecond, "")
	cases := []struct {
		name      string
		sig       syscall.Signal
		afterEnd  bool
		duration  string
		waitBefor string
	}{
		{"SIGTERM after the end", syscall.SIGTERM, true, "2s", "verdict:"},
		{"SIGINT after the end", syscall.SIGINT, true, "2s", "verdict:"},
		{"SIGQUIT after the end", syscall.SIGQUIT, true, "2s", "verdict:"},
		{"SIGTERM during the run", syscall.SIGTERM, false, "60s", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := &syncBuffer{}
			cmd := exec.Command(bin, loadArgs(url, "--rate", "10", "--duration", c.duration, "--no-preflight", "--no-scrape",
				"--metrics-listen", "127.0.0.1:0", "--metrics-linger", "5m")...)
			cmd.Stdout, cmd.Stderr = out, out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan int, 1)
			go func() {
				_ = cmd.Wait()
				done <- cmd.ProcessState.ExitCode()
			}()
			defer func() {
				_ = cmd.Process.Kill()
			}()
			m := waitOutput(t, out, regexp.MustCompile(`live metrics at (http://127\.0\.0\.1:\d+/metrics)\n`), done)
			// One scrape during the run: the linger then waits for the next.
			res, err := http.Get(m[1])
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if c.afterEnd {
				waitOutput(t, out, regexp.MustCompile(regexp.QuoteMeta(c.waitBefor)), done)
			}
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("still running 20s after %v (linger 5m):\n%s", c.sig, out)
			}
			if !c.afterEnd && !strings.Contains(out.String(), "ABORTED by signal SIGTERM") {
				t.Errorf("the run was not aborted by the signal:\n%s", out)
			}
		})
	}
}

// TestShardLingerEndsWithinAPodsGrace: in a shard (load --shard), the
// linger after the run is bounded so that it ends, and the shard's report
// is written, within the 30 s a Kubernetes pod gets between SIGTERM and
// SIGKILL, whatever --metrics-linger asks; a whole run keeps what was
// asked, and a shorter linger is kept as it is.
func TestShardLingerEndsWithinAPodsGrace(t *testing.T) {
	t.Parallel()
	const podGrace = 30 * time.Second // a pod's default terminationGracePeriodSeconds
	for _, tt := range []struct {
		name string
		args []string
		want time.Duration
	}{
		{"a whole run", []string{"--metrics-linger", "5m"}, 5 * time.Minute},
		{"a shard", []string{"--shard", "1/4", "--metrics-linger", "5m"}, maxShardLinger},
		{"a shard, the default linger", []string{"--shard", "0/2"}, maxShardLinger},
		{"a shard, a short linger", []string{"--shard", "0/2", "--metrics-linger", "10s"}, 10 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--target", "http://127.0.0.1:1/v1", "--model", "m", "--workload", "chat", "--rate", "5", "--duration", "10s",
				"--metrics-listen", "127.0.0.1:0"}, tt.args...)
			lf := defaultLoadFlags()
			fs := pflag.NewFlagSet("load", pflag.ContinueOnError)
			addLoadFlags(fs, &lf)
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			cfg, err := lf.config(fs)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.pipeline(nil, nil, recording.Options{}, func(string) {}).Observe.Linger; got != tt.want {
				t.Errorf("linger %v, want %v", got, tt.want)
			}
		})
	}
	// What is left of the grace after the linger writes the report.
	if left := podGrace - maxShardLinger; left < 5*time.Second {
		t.Errorf("a shard's linger of %v leaves %v of a pod's grace for its report", maxShardLinger, left)
	}
}
