package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/testutil"
	"github.com/llmchaos/llmchaos/report"
)

func TestParseStartAt(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in      string
		want    time.Time
		wantErr string
	}{
		{"now", time.Time{}, ""},
		{"NOW", time.Time{}, ""},
		{"2025-06-01T12:00:30Z", now.Add(30 * time.Second), ""},
		{"2025-06-01T12:00:30.123456789Z", now.Add(30*time.Second + 123456789), ""},
		{"2025-06-01 14:00:30.5+02:00", now.Add(30*time.Second + 500*time.Millisecond), ""},
		{"2025-06-01T11:59:59.5Z", now.Add(-500 * time.Millisecond), ""}, // within the tolerance
		{"2025-06-01T11:59:50Z", time.Time{}, "is 10s in the past"},
		{"12:00:30", time.Time{}, "want an RFC 3339 instant"},
		{"+30s", time.Time{}, "want an RFC 3339 instant"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseStartAt(tt.in, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseStartAt(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !got.Equal(tt.want) {
				t.Fatalf("parseStartAt(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestLoadShardFlagErrors(t *testing.T) {
	t.Parallel()
	base := []string{"load", "--target", "http://h/v1", "--model", "m", "--workload", "chat"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unexpanded index", []string{"--rate", "5", "--duration", "1s", "--shard", "$JOB_COMPLETION_INDEX/3"},
			[]string{"--shard", "$JOB_COMPLETION_INDEX is an unexpanded variable"}},
		{"index out of range", []string{"--rate", "5", "--duration", "1s", "--shard", "3/3"}, []string{"--shard", "index 3 is not below the count 3"}},
		{"closed loop too thin", []string{"--concurrency", "2", "--duration", "1s", "--shard", "0/3"}, []string{"--shard 0/3", "--concurrency 2 is split over 3 shards"}},
		{"start in the past", []string{"--rate", "5", "--duration", "1s", "--start-at", "2020-01-01T00:00:00Z"}, []string{"--start-at", "in the past"}},
		{"start not an instant", []string{"--rate", "5", "--duration", "1s", "--start-at", "soon"}, []string{"--start-at", "RFC 3339"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := run(t, append(slices.Clone(base), tt.args...)...)
			if code != exitcode.Usage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitcode.Usage, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, errs)
				}
			}
		})
	}
}

// TestLoadInterruptedWaitingForStart: Ctrl-C while a shard waits for its
// --start-at is an abort (98) that sent nothing.
func TestLoadInterruptedWaitingForStart(t *testing.T) {
	t.Parallel()
	url := loadSim(t, time.Millisecond, time.Millisecond, "")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	start := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	code := execute(ctx, loadArgs(url, "--rate", "5", "--requests", "2", "--progress", "0", "--no-scrape", "--shard", "1/2", "--start-at", start), &out, &errb)
	if code != exitcode.Aborted || !strings.Contains(errb.String(), "aborted during the wait for --start-at") || !strings.Contains(errb.String(), "no load was sent") {
		t.Fatalf("exit %d, want %d with an abort while waiting; output:\n%s%s", code, exitcode.Aborted, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "shard 1/2") || !strings.Contains(out.String(), "starts at "+strings.TrimSuffix(start, "Z")) {
		t.Errorf("the start lines do not name the shard and its start:\n%s", out.String())
	}
}

// savedRequest is one line of --save-requests, the fields a shard must
// share with the single process.
type savedRequest struct {
	Seq         uint64 `json:"seq"`
	RequestID   string `json:"request_id"`
	ScheduledUs int64  `json:"scheduled_us"`
	SentUs      int64  `json:"sent_us"`
	PromptSent  int    `json:"prompt_tokens_sent"`
	Outcome     string `json:"outcome"`
}

func readSavedRequests(t *testing.T, path string) []savedRequest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []savedRequest
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r savedRequest
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %q: %v", path, sc.Text(), err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b savedRequest) int { return int(a.Seq) - int(b.Seq) })
	return out
}

// TestLoadShardsMergeAsOneProcess runs one load as three shard processes of
// the real binary, started together with --start-at, merges their reports
// and compares with the same load run by one process: the same requests
// (sequence number, request id, scheduled time, prompt), the shards' sum in
// the merged report, and TTFT percentiles close (the simulator's latency
// is constant). Merge refuses an incomplete or repeated set.
func TestLoadShardsMergeAsOneProcess(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	url := loadSim(t, 20*time.Millisecond, 2*time.Millisecond, "")
	dir := t.TempDir()
	const requests = 90
	args := func(extra ...string) []string {
		return append([]string{"load", "--target", url, "--model", "llmchaos-sim", "--rate", "60", "--arrival", "poisson",
			"--requests", fmt.Sprint(requests), "--prompt-tokens", "uniform:10:200", "--max-tokens", "4", "--ignore-eos",
			"--seed", "21", "--progress", "0", "--no-scrape", "--grace", "10s"}, extra...)
	}
	// Ahead enough for three processes to start and pass their pre-flight
	// check on a loaded machine; a shard past it by more than a second
	// refuses to run, and the test says so.
	start := time.Now().Add(2500 * time.Millisecond).Truncate(time.Millisecond).UTC()
	startArg := start.Format(time.RFC3339Nano)
	var shards []*testutil.Proc
	for i := range 3 {
		shards = append(shards, testutil.StartProc(t, nil, bin, args("--shard", fmt.Sprintf("%d/3", i), "--start-at", startArg,
			"--out", filepath.Join(dir, fmt.Sprintf("shard%d.json", i)), "--save-requests", filepath.Join(dir, fmt.Sprintf("shard%d.jsonl", i)))...))
	}
	for i, p := range shards {
		select {
		case <-p.Done():
		case <-time.After(60 * time.Second):
			t.Fatalf("shard %d/3 still runs after 60 s", i)
		}
		if code := p.Cmd.ProcessState.ExitCode(); code != exitcode.OK {
			t.Fatalf("shard %d/3 exit %d; stderr:\n%s", i, code, p.Err)
		}
	}
	whole := testutil.StartProc(t, nil, bin, args("--out", filepath.Join(dir, "whole.json"), "--save-requests", filepath.Join(dir, "whole.jsonl"))...)
	select {
	case <-whole.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("the single-process run still runs after 60 s")
	}
	if code := whole.Cmd.ProcessState.ExitCode(); code != exitcode.OK {
		t.Fatalf("single process exit %d; stderr:\n%s", code, whole.Err)
	}

	// Request by request: the shards sent exactly the single process's.
	want := readSavedRequests(t, filepath.Join(dir, "whole.jsonl"))
	if len(want) != requests {
		t.Fatalf("the single process saved %d requests, want %d", len(want), requests)
	}
	var union []savedRequest
	var paths []string
	for i := range 3 {
		part := readSavedRequests(t, filepath.Join(dir, fmt.Sprintf("shard%d.jsonl", i)))
		if len(part) != requests/3 {
			t.Errorf("shard %d/3 saved %d requests, want %d", i, len(part), requests/3)
		}
		for _, r := range part {
			if int(r.Seq%3) != i {
				t.Errorf("shard %d/3 sent seq %d", i, r.Seq)
			}
			if r.Outcome != "ok" || r.SentUs < r.ScheduledUs {
				t.Errorf("shard %d/3 seq %d: %s, sent at %d µs, scheduled at %d µs", i, r.Seq, r.Outcome, r.SentUs, r.ScheduledUs)
			}
		}
		union = append(union, part...)
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("shard%d.json", i)))

		doc, err := report.Read(paths[i])
		if err != nil {
			t.Fatal(err)
		}
		if doc.Shard == nil || doc.Shard.Index != i || doc.Shard.Count != 3 || !doc.Shard.StartAt.Equal(start) {
			t.Errorf("shard %d/3's report has shard %+v, want %d/3 starting at %s", i, doc.Shard, i, startArg)
		}
		// The run's clock started at the --start-at instant.
		if d := doc.StartedAt.Sub(start); d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("shard %d/3 started at %s, %v from --start-at %s", i, doc.StartedAt.Format(time.RFC3339Nano), d, startArg)
		}
	}
	slices.SortFunc(union, func(a, b savedRequest) int { return int(a.Seq) - int(b.Seq) })
	key := func(r savedRequest) string {
		return fmt.Sprintf("seq %d id %s scheduled %dµs prompt %d", r.Seq, r.RequestID, r.ScheduledUs, r.PromptSent)
	}
	if len(union) != len(want) {
		t.Fatalf("the shards sent %d requests together, the single process %d", len(union), len(want))
	}
	for i := range want {
		if key(union[i]) != key(want[i]) {
			t.Errorf("request %d: shards %s, single process %s", i, key(union[i]), key(want[i]))
		}
	}

	// The merged report adds the shards up and measures what one process did.
	merged := filepath.Join(dir, "merged.json")
	if code, _, errs := run(t, append(append([]string{"merge"}, paths...), "-o", merged)...); code != exitcode.OK {
		t.Fatalf("merge: exit %d: %s", code, errs)
	} else if errs != "" {
		t.Errorf("merging one set of shards warned:\n%s", errs)
	}
	m, err := report.Read(merged)
	if err != nil {
		t.Fatal(err)
	}
	one, err := report.Read(filepath.Join(dir, "whole.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Requests.Scheduled != requests || m.Requests.OK != requests || m.Requests.Sent != requests || m.Requests.Lost != 0 {
		t.Errorf("merged requests %+v, want %d scheduled, sent and ok", m.Requests, requests)
	}
	if got, want := m.Metrics["ttft_ms"].Count, one.Metrics["ttft_ms"].Count; got != want {
		t.Errorf("merged ttft count %d, single process %d", got, want)
	}
	// Constant 20 ms TTFT: both runs measure about that at the median,
	// with a margin for a loaded machine running four load processes; the
	// tails (p90 over 90 requests is the 9th-worst) follow the machine's
	// load (a single process's send lag p99 of 125 ms once) and are logged.
	if got, one := m.Metrics["ttft_ms"].P50, one.Metrics["ttft_ms"].P50; math.Abs(got-one) > 10 {
		t.Errorf("ttft p50: merged shards %.1f ms, single process %.1f ms: differ by more than 10 ms", got, one)
	}
	t.Logf("ttft p50/p90: merged shards %.1f/%.1f ms, single process %.1f/%.1f ms; send_lag p99: merged %.2f ms, single %.2f ms",
		m.Metrics["ttft_ms"].P50, m.Metrics["ttft_ms"].P90, one.Metrics["ttft_ms"].P50, one.Metrics["ttft_ms"].P90,
		m.Metrics["send_lag_ms"].P99, one.Metrics["send_lag_ms"].P99)
	if len(m.MergedFrom) != 3 || m.Shard != nil {
		t.Errorf("merged report: merged_from %d runs, shard %v; want 3 and none", len(m.MergedFrom), m.Shard)
	}

	// Not one set: refused with the files named, or merged with --partial.
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a shard missing", []string{paths[0], paths[2]}, exitcode.Usage, "shard 1/3 is missing"},
		{"a shard missing, partial", []string{paths[0], paths[2], "--partial"}, exitcode.OK, "warning: shard 1/3 is missing"},
		{"a shard twice", []string{paths[0], paths[1], paths[2], paths[1]}, exitcode.Usage, "shard 1/3 is given 2 times"},
		{"with a whole run", []string{paths[0], paths[1], paths[2], filepath.Join(dir, "whole.json")}, exitcode.Usage, "whole.json is not"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := run(t, append(append([]string{"merge"}, tt.args...), "-o", filepath.Join(dir, "m.json"))...)
			if code != tt.code || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, want %d with %q; stderr:\n%s", code, tt.code, tt.want, errs)
			}
		})
	}
}
