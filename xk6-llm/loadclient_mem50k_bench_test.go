package llm_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/benchserver"
)

// The 50,000-stream case of BenchmarkLoadClientTable. One process may open
// at most 20,000 files on this machine (the hard limit, which only
// CAP_SYS_RESOURCE raises; Docker's daemon has the same limit), and each
// end of a stream takes one, so the streams are held by several event-loop
// client processes at once (the test binary re-executed), each against a
// bench server process of its own, as `workload.shards` splits a big load.
// The figure is the sum of the clients' RSS, each process's own baseline
// included.
const (
	memChildEnv   = "LLMCHAOS_BENCH_MEMCHILD"    // "URL STREAMS" for the child
	mem50kProcEnv = "LLMCHAOS_BENCH_50K_PROCS"   // client processes (default 4)
	mem50kEnv     = "LLMCHAOS_BENCH_50K_STREAMS" // streams in all (default 50,000)
)

// memChildReport is what a child prints once it has measured.
type memChildReport struct {
	Streams  int     `json:"streams"`
	RSS0     float64 `json:"rss0"`
	RSS      float64 `json:"rss"`
	Heap     int     `json:"heap"`
	Gorouts  int     `json:"goroutines"`
	OpenSecs float64 `json:"open_s"`
}

// TestLoadClientMemChild is not a test of its own: it is one client process
// of the 50,000-stream case when re-executed with memChildEnv set. It opens
// its streams, prints "OPEN", waits for a line on its standard input,
// reads its RSS, prints "RSS {json}" and ends.
func TestLoadClientMemChild(t *testing.T) {
	spec := os.Getenv(memChildEnv)
	if spec == "" {
		t.Skip("helper process for BenchmarkLoadClientTable's 50,000-stream case")
	}
	url, n, _ := strings.Cut(spec, " ")
	streams, err := strconv.Atoi(n)
	if err != nil {
		t.Fatal(err)
	}
	raiseFileLimit(t, uint64(streams)+1024)
	src := []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3"), netip.MustParseAddr("127.0.0.4"), netip.MustParseAddr("127.0.0.5")}
	// 10 s between tokens: 50,000 streams at 1 s would be 50,000 tokens/s,
	// more than these two cores serve and read with the servers alongside.
	tc := newTableClient(t, "eventloop", streams, http.Header{"X-Bench-ITL": {"10s"}}, src)
	defer tc.close()
	in := bufio.NewReader(os.Stdin)
	f := runMem(t, tc, url, streams, 1, func() {
		fmt.Println("OPEN")
		_, _ = in.ReadString('\n')
	})
	out, _ := json.Marshal(memChildReport{Streams: f.streams, RSS0: f.rss0, RSS: f.rss, Heap: f.heap, Gorouts: f.gorouts, OpenSecs: f.open.Seconds()})
	fmt.Printf("RSS %s\n", out)
}

// mem50kFigures is the 50,000-stream case's result.
type mem50kFigures struct {
	procs, streams int
	rss, rss0      float64 // sums, bytes
	open           time.Duration
	children       []memChildReport
}

// runMem50k holds the streams across procs client processes at once and
// sums their RSS, read while every one of them holds its streams.
func runMem50k(b *testing.B, streams, procs int) mem50kFigures {
	b.Helper()
	type child struct {
		stdin io.WriteCloser
		lines *bufio.Scanner
	}
	children := make([]child, procs)
	t0 := time.Now()
	for i := range children {
		url := benchserver.Start(b) // a server per client: each holds its streams' other ends
		_, stdin, lines := benchserver.StartChild(b, "TestLoadClientMemChild", fmt.Sprintf("%s=%s %d", memChildEnv, url, streams/procs))
		children[i] = child{stdin: stdin, lines: lines}
	}
	// Wait until each has every stream open (they open at once, each at
	// 3,000 streams/s), hold 2 s with all open, then let them measure.
	wait := func(c child, prefix string) (string, error) {
		var said []string // what the child printed otherwise: its test log
		for c.lines.Scan() {
			if rest, ok := strings.CutPrefix(c.lines.Text(), prefix); ok {
				return rest, nil
			}
			said = append(said, c.lines.Text())
		}
		return "", fmt.Errorf("a client process ended before %q (%v):\n%s", prefix, c.lines.Err(), strings.Join(said, "\n"))
	}
	errs := make([]error, len(children))
	var wg sync.WaitGroup
	for i, c := range children {
		wg.Go(func() { _, errs[i] = wait(c, "OPEN") })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	f := mem50kFigures{procs: procs, streams: streams / procs * procs, open: time.Since(t0)}
	time.Sleep(2 * time.Second)
	for _, c := range children {
		fmt.Fprintln(c.stdin)
	}
	for _, c := range children {
		line, err := wait(c, "RSS ")
		if err != nil {
			b.Fatal(err)
		}
		var r memChildReport
		if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &r); err != nil {
			b.Fatal(err)
		}
		f.rss += r.RSS
		f.rss0 += r.RSS0
		f.children = append(f.children, r)
	}
	return f
}
