package vgpu

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a helper process (see TestMain).
const helperEnv = "VGPU_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode, os.Args[len(os.Args)-3:]))
	}
	os.Exit(m.Run())
}

// helperMain runs in a child process. Modes:
//   - hold DIR TOTAL BYTES: reserve BYTES, print "held", wait for stdin to close.
//   - grab DIR TOTAL CHUNK: wait for a line on stdin, reserve CHUNK until refused,
//     print the count, wait for stdin to close.
func helperMain(mode string, args []string) int {
	dir := args[0]
	total, _ := strconv.ParseInt(args[1], 10, 64)
	n, _ := strconv.ParseInt(args[2], 10, 64)
	d, err := Open(dir, 0, total)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	in := bufio.NewReader(os.Stdin)
	switch mode {
	case "hold":
		if err := d.Reserve(n, "helper"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("held")
	case "grab":
		if _, err := in.ReadString('\n'); err != nil {
			return 1
		}
		count := 0
		for {
			err := d.Reserve(n, "grab")
			var re *ReserveError
			if errors.As(err, &re) {
				break
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			count++
		}
		fmt.Println(count)
	default:
		return 2
	}
	in.ReadString('\n') // until stdin closes
	return 0
}

// helper is a running helper process.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startHelper(t *testing.T, mode, dir string, total, n int64) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", dir, strconv.FormatInt(total, 10), strconv.FormatInt(n, 10))
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		h.stdin.Close()
		h.cmd.Process.Kill()
		h.cmd.Wait()
	})
	return h
}

func (h *helper) line(t *testing.T) string {
	t.Helper()
	s, err := h.out.ReadString('\n')
	if err != nil {
		t.Fatalf("helper pid %d: read its output: %v", h.cmd.Process.Pid, err)
	}
	return strings.TrimSpace(s)
}

func mustOpen(t *testing.T, dir string, total int64) *Device {
	t.Helper()
	d, err := Open(dir, 0, total)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func mustFree(t *testing.T, d *Device) int64 {
	t.Helper()
	f, err := d.Free()
	if err != nil {
		t.Fatalf("Free: %v", err)
	}
	return f
}

func TestOpenCapacity(t *testing.T) {
	dir := t.TempDir()
	first := mustOpen(t, dir, 80*GiB)
	if got := first.Total(); got != 80*GiB {
		t.Errorf("Total() = %d, want %d", got, 80*GiB)
	}
	adopt := mustOpen(t, dir, 0)
	if got := adopt.Total(); got != 80*GiB {
		t.Errorf("Total() of an opener passing 0 = %d, want the recorded %d", got, 80*GiB)
	}
	_, err := Open(dir, 0, 141*GiB)
	var ce *CapacityError
	if !errors.As(err, &ce) {
		t.Fatalf("Open with another capacity: err = %v, want *CapacityError", err)
	}
	if ce.Recorded != 80*GiB || ce.Asked != 141*GiB {
		t.Errorf("CapacityError = %+v, want recorded %d asked %d", ce, 80*GiB, 141*GiB)
	}
	for _, want := range []string{"80.0 GiB", "141.0 GiB", "--gpu-memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := Open(dir, 1, 0); err == nil || !strings.Contains(err.Error(), "no capacity") {
		t.Errorf("Open of an unrecorded device with total 0: err = %v, want a no-capacity error", err)
	}
	if _, err := Open(dir, -1, GiB); err == nil {
		t.Error("Open with index -1 succeeded, want an error")
	}
}

func TestReserveFreeRelease(t *testing.T) {
	dir := t.TempDir()
	a := mustOpen(t, dir, 100*GiB)
	b := mustOpen(t, dir, 100*GiB)

	if err := a.Reserve(16*GiB, "weights"); err != nil {
		t.Fatal(err)
	}
	if err := a.Reserve(60*GiB, "kv cache"); err != nil {
		t.Fatal(err)
	}
	if got, want := mustFree(t, b), 24*GiB; got != want {
		t.Errorf("Free() seen by another handle = %d, want %d", got, want)
	}
	if got, want := a.Held(), 76*GiB; got != want {
		t.Errorf("Held() = %d, want %d", got, want)
	}

	err := b.Reserve(30*GiB, "balloon")
	var re *ReserveError
	if !errors.As(err, &re) {
		t.Fatalf("over-reserve: err = %v, want *ReserveError", err)
	}
	if re.Need != 30*GiB || re.Free != 24*GiB || re.Total != 100*GiB {
		t.Errorf("ReserveError numbers = need %d free %d total %d, want %d %d %d", re.Need, re.Free, re.Total, 30*GiB, 24*GiB, 100*GiB)
	}
	for _, want := range []string{"need 30.0 GiB", "free 24.0 GiB of 100.0 GiB", fmt.Sprintf("pid %d", os.Getpid()), "weights 16.0 GiB", "kv cache 60.0 GiB"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if got, want := mustFree(t, b), 24*GiB; got != want {
		t.Errorf("Free() after a refused reserve = %d, want %d (a refusal holds nothing)", got, want)
	}

	took, err := b.ReserveAllBut(4*GiB, "balloon")
	if err != nil {
		t.Fatal(err)
	}
	if took != 20*GiB {
		t.Errorf("ReserveAllBut(4 GiB) took %d, want %d", took, 20*GiB)
	}
	if _, err := b.ReserveAllBut(4*GiB, "balloon"); !errors.As(err, &re) {
		t.Errorf("ReserveAllBut with only the leave free: err = %v, want *ReserveError", err)
	}
	hs, err := b.Holders()
	if err != nil {
		t.Fatal(err)
	}
	var whats []string
	var sum int64
	for _, h := range hs {
		whats = append(whats, h.What)
		sum += h.Bytes
		if h.PID != os.Getpid() {
			t.Errorf("holder pid = %d, want %d", h.PID, os.Getpid())
		}
	}
	if sum != 96*GiB || len(hs) != 3 {
		t.Errorf("Holders() = %v (sum %d), want 3 holders summing to %d", whats, sum, 96*GiB)
	}

	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(); err != nil {
		t.Errorf("second Release: %v, want nil (idempotent)", err)
	}
	if got, want := mustFree(t, b), 80*GiB; got != want {
		t.Errorf("Free() after Release = %d, want %d", got, want)
	}
	if err := a.Reserve(-1, "x"); err == nil {
		t.Error("Reserve(-1) succeeded, want an error")
	}
}

func TestDeadProcessEntriesDoNotCount(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, 10*GiB)
	h := startHelper(t, "hold", dir, 10*GiB, 7*GiB)
	if got := h.line(t); got != "held" {
		t.Fatalf("helper said %q, want %q", got, "held")
	}
	if got, want := mustFree(t, d), 3*GiB; got != want {
		t.Fatalf("Free() while the helper holds = %d, want %d", got, want)
	}
	if err := d.Reserve(4*GiB, "weights"); err == nil {
		t.Fatal("Reserve beyond what a live helper leaves succeeded")
	}

	// Killed but not reaped: a zombie holds no memory, as with a real driver.
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "helper to become a zombie", func() bool {
		_, alive, err := procStart(h.cmd.Process.Pid)
		return err == nil && !alive
	})
	if got, want := mustFree(t, d), 10*GiB; got != want {
		t.Errorf("Free() after the holder died = %d, want %d", got, want)
	}
	h.cmd.Wait()
	if err := d.Reserve(4*GiB, "weights"); err != nil {
		t.Fatalf("Reserve after the holder died: %v", err)
	}
	// The reserver swept the dead entry.
	names, _ := filepath.Glob(filepath.Join(d.Dir(), entryPrefix+strconv.Itoa(h.cmd.Process.Pid)+"-*"))
	if len(names) != 0 {
		t.Errorf("dead entries left after a reserve: %v", names)
	}
}

func TestReusedPIDDoesNotCount(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, 10*GiB)
	// An entry carrying this process's pid but another start time is what a
	// dead process whose pid was reused leaves behind.
	stale := fmt.Sprintf("%s%d-%d-%d-1", entryPrefix, d.self.pid, d.self.start+1, 5*GiB)
	if err := os.WriteFile(filepath.Join(d.Dir(), stale), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// And one with the right start time does count.
	live := fmt.Sprintf("%s%d-%d-%d-2", entryPrefix, d.self.pid, d.self.start, 2*GiB)
	if err := os.WriteFile(filepath.Join(d.Dir(), live), []byte("live\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := mustFree(t, d), 8*GiB; got != want {
		t.Errorf("Free() = %d, want %d (only the entry with the right start time counts)", got, want)
	}
}

func TestConcurrentReserversNeverExceedTotal(t *testing.T) {
	const (
		procs = 5
		total = 100 * GiB
		chunk = 3 * GiB
	)
	dir := t.TempDir()
	d := mustOpen(t, dir, total)
	hs := make([]*helper, procs)
	for i := range hs {
		hs[i] = startHelper(t, "grab", dir, total, chunk)
	}
	// Goroutines of this process race too, each with its own handle.
	var wg sync.WaitGroup
	counts := make([]int, 3)
	errs := make([]error, len(counts))
	start := make(chan struct{})
	for i := range counts {
		g := mustOpen(t, dir, total)
		wg.Go(func() {
			<-start
			for {
				err := g.Reserve(chunk, "goroutine")
				var re *ReserveError
				if errors.As(err, &re) {
					return
				}
				if err != nil {
					errs[i] = err
					return
				}
				counts[i]++
			}
		})
	}
	for _, h := range hs {
		if _, err := fmt.Fprintln(h.stdin, "go"); err != nil {
			t.Fatal(err)
		}
	}
	close(start)
	wg.Wait()
	got := 0
	for i, c := range counts {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
		got += c
	}
	for _, h := range hs {
		n, err := strconv.Atoi(h.line(t))
		if err != nil {
			t.Fatalf("helper output: %v", err)
		}
		got += n
	}
	if want := int(total / chunk); got != want {
		t.Errorf("chunks reserved by %d processes and %d goroutines = %d, want exactly %d (never more than fit, none left unused)",
			procs, len(counts), got, want)
	}
	if f, want := mustFree(t, d), total-int64(total/chunk)*chunk; f != want {
		t.Errorf("Free() = %d, want %d", f, want)
	}
}

func TestLedgerBalloon(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, 10*GiB)
	b := NewLedgerBalloon(mustOpen(t, dir, 0), "")
	ctx := context.Background()
	if err := b.Hold(ctx, 2*GiB); err != nil {
		t.Fatal(err)
	}
	took, err := b.HoldAllBut(ctx, GiB)
	if err != nil {
		t.Fatal(err)
	}
	if took != 7*GiB {
		t.Errorf("HoldAllBut(1 GiB) took %d, want %d", took, 7*GiB)
	}
	if got, _ := b.Free(ctx); got != GiB {
		t.Errorf("Free() = %d, want %d", got, GiB)
	}
	hs, _ := d.Holders()
	for _, h := range hs {
		if h.What != "balloon" {
			t.Errorf("holder what = %q, want %q", h.What, "balloon")
		}
	}
	if err := b.Hold(ctx, 2*GiB); err == nil {
		t.Error("Hold beyond free succeeded")
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	if got := mustFree(t, d); got != 10*GiB {
		t.Errorf("Free() after Release = %d, want %d", got, 10*GiB)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Hold(cctx, GiB); !errors.Is(err, context.Canceled) {
		t.Errorf("Hold with a cancelled ctx: err = %v, want context.Canceled", err)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		<-tick.C
	}
}

func BenchmarkFree(b *testing.B) {
	dir := b.TempDir()
	d, err := Open(dir, 0, 141*GiB)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	// A busy device: weights, KV pool and a few activation reservations of
	// this process, plus entries of other (here: dead) processes.
	for _, w := range []string{"weights", "kv cache", "act", "act", "act"} {
		if err := d.Reserve(GiB, w); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Free(); err != nil {
			b.Fatal(err)
		}
	}
	per := b.Elapsed() / time.Duration(max(b.N, 1))
	b.Logf("Free() with 5 reservations: %v per call; at one call per 100 ms that is %.4f%% of a core", per, float64(per)/float64(100*time.Millisecond)*100)
}

func BenchmarkReserveRelease(b *testing.B) {
	dir := b.TempDir()
	d, err := Open(dir, 0, 141*GiB)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	for b.Loop() {
		if err := d.Reserve(MiB, "act"); err != nil {
			b.Fatal(err)
		}
		if err := d.Release(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestKeepFreeTakesFreedMemory(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, 10*GiB)
	h := startHelper(t, "hold", dir, 10*GiB, 5*GiB)
	if got := h.line(t); got != "held" {
		t.Fatalf("helper said %q, want %q", got, "held")
	}
	b := NewLedgerBalloon(mustOpen(t, dir, 0), "")
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg    sync.WaitGroup
		err   error
		mu    sync.Mutex
		takes []int64
	)
	wg.Go(func() {
		err = KeepFree(ctx, b, GiB, 10*time.Millisecond, func(n int64) {
			mu.Lock()
			takes = append(takes, n)
			mu.Unlock()
		})
	})
	waitFor(t, 5*time.Second, "the balloon to take the headroom", func() bool { return mustFree(t, d) == GiB })
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h.cmd.Wait()
	waitFor(t, 5*time.Second, "the balloon to take the dead holder's memory", func() bool {
		hs, _ := d.Holders()
		return len(hs) > 0 && hs[0].PID == os.Getpid() && mustFree(t, d) == GiB
	})
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatalf("KeepFree: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(takes) != 2 || takes[0] != 4*GiB || takes[1] != 5*GiB {
		t.Errorf("takes = %v, want [%d %d]", takes, 4*GiB, 5*GiB)
	}
}
