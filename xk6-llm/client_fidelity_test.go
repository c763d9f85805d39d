package llm_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// maxFidelityDiff is the most the event-loop client's TTFT and ITL
// percentiles may differ from the goroutine (net/http) client's on the
// same run (the 0.3 ms).
const maxFidelityDiff = 300 * time.Microsecond

// TestE2EEventLoopFidelity sends the same requests through the event-loop
// client and the goroutine (net/http) client against the simulator in a
// process of its own (constant latency: TTFT 20 ms, ITL 5 ms), the two
// alternating request by request on the same workers over one run, so
// that the machine's noise falls on both alike, and compares their TTFT
// and ITL percentiles: p50 within 0.3 ms either way; p99 no more than
// 0.3 ms above the goroutine client's.
//
// Why p99 is one-sided: a goroutine per stream waits for the scheduler
// after its socket turns readable; the loop reads every ready socket at
// once when it wakes, so its tail holds less of the client's own delay
// (TestE2EClientTimingError checks the loop's readings against the
// simulator's own record of each write). Quiet runs on this 2-core
// machine (a bare goroutine's wake-up lateness p99 1.05–1.09 ms) gave TTFT
// p99 eventloop 22.06/22.83/23.18 ms against nethttp 23.55/22.88/23.17,
// ITL p99 5.97/5.96/6.06 against 5.93/6.04/6.00, p50s within 0.05 ms. A
// client more exact at the tail is no fidelity loss; a later one would be.
//
// Why up to three tries: with two other test packages running beside it
// (probe p99 1.39 ms, max 14.6 ms), ITL p99 read 8.04 ms (eventloop)
// against 7.59 ms (nethttp) while the p50s stayed 12 µs apart: when the
// machine takes the CPU away, the loop's reads of all its streams wait
// together, where goroutines on the other core read on, and a p99 over
// 240 TTFTs is the third-worst reading. Gating on a quiet probe did not
// help (in CI a stall of the loop's thread that the probe's goroutine did
// not share decided TestE2EClientTimingError's p99). A client that is
// really later at the tail is later on every try; a stall of the machine
// falls on one. So each try is a fresh run, a failed one is logged, and
// the test fails when all fidelityTries fail. Measured on an idle machine:
// 24 runs, the first try of a process failed 5 times (TTFT p99 0.37–3.5
// ms later: the test process's heap is still growing, and a GC cycle
// stops the loop's thread, which serves every stream), a second try never.
const fidelityTries = 3

func TestE2EEventLoopFidelity(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real time: 480 streams of 0.12 s per try")
	}
	if raceEnabled {
		t.Skip("timing fidelity is checked in make test's non-race pass")
	}
	p := startSimProcess(t, simOpts{TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond, MaxNumSeqs: 1024, MaxWaiting: 4096})
	var problems []string
	for try := 1; try <= fidelityTries; try++ {
		problems = fidelityTry(t, p.url)
		if t.Failed() {
			return
		}
		if len(problems) == 0 {
			return
		}
		t.Logf("try %d of %d: %s", try, fidelityTries, strings.Join(problems, "; "))
	}
	t.Errorf("the event-loop client's percentiles left the bounds on all %d tries; last: %s", fidelityTries, strings.Join(problems, "; "))
}

// fidelityTry runs both clients alternately over one fresh run against
// url and returns what left the bounds (nothing: the try passed). A
// failed request fails the test.
func fidelityTry(t *testing.T, url string) []string {
	const workers, rounds, tokens = 12, 40, 20
	clock := recording.NewRunClock()
	names := []string{"eventloop", "nethttp"}
	var clients [2]*client.Client
	var recs [2]*recording.Recorder
	for i, tr := range []client.Transport{client.TransportEventLoop, client.TransportNetHTTP} {
		c, err := client.New(client.Options{Clock: clock, Transport: tr, Concurrency: workers, Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
		recs[i] = recording.NewRecorder(recording.Options{})
	}
	req := &workload.Request{Chat: true, Model: "llmchaos-sim", Stream: true, MaxTokens: tokens, MinTokens: tokens, IgnoreEOS: true,
		Messages: []workload.Message{{Role: "user", Content: "fidelity"}}}
	ctx, stop := context.WithCancel(context.Background())
	var probe []time.Duration
	var probeDone sync.WaitGroup
	probeDone.Go(func() { probe = wakeProbe(ctx, time.Millisecond) })
	var wg sync.WaitGroup
	var failed sync.Once
	// Warm-up, not recorded: four requests per worker on each client;
	// the first opens a connection (the loop's non-blocking connect and the
	// goroutine client's dial differ by a fraction of a ms, and 12 cold
	// requests of 240 would be the p99); the recorded rounds measure
	// streams on open connections, as a run's steady state does.
	for w := range workers {
		wg.Go(func() {
			for i := range 4 * len(clients) {
				var res recording.Result
				res.Scheduled = clock.Now()
				clients[(w+i)%2].Do(context.Background(), url, req, &res)
			}
		})
	}
	wg.Wait()
	for w := range workers {
		wg.Go(func() {
			for k := range rounds {
				i := (w + k) % 2 // alternate clients, and start the workers on both
				var res recording.Result
				res.Scheduled = clock.Now()
				clients[i].Do(context.Background(), url, req, &res)
				if res.Outcome != recording.OutcomeOK || res.ContentChunks != tokens {
					failed.Do(func() {
						t.Errorf("%s: %v %s %q, %d chunks", names[i], res.Outcome, res.Class, res.Err, res.ContentChunks)
					})
					return
				}
				recs[i].Record(&res)
			}
		})
	}
	wg.Wait()
	stop()
	probeDone.Wait()
	if t.Failed() {
		return nil
	}
	if clients[0].IOStats().Reads == 0 || clients[1].IOStats().Reads != 0 {
		t.Fatalf("event-loop reads: %d and %d; want the first client only on the loop", clients[0].IOStats().Reads, clients[1].IOStats().Reads)
	}
	end := clock.Now()
	var d [2][2]recording.Distribution // client × (ttft, itl)
	for i := range recs {
		sum := recs[i].Finish(end)
		d[i][0] = sum.Distribution(recording.MetricTTFT, recording.TagFilter{})
		d[i][1] = sum.Distribution(recording.MetricITL, recording.TagFilter{})
	}
	wake := figures(probe)
	t.Logf("goroutine wake-up lateness (probe): %v", wake)
	var problems []string
	for m, name := range []string{"ttft", "itl"} {
		el, nh := d[0][m], d[1][m]
		t.Logf("%s µs: eventloop n=%d p50 %d p99 %d; nethttp n=%d p50 %d p99 %d", name, el.Count, el.P50, el.P99, nh.Count, nh.P50, nh.P99)
		if diff := time.Duration(el.P50-nh.P50) * time.Microsecond; diff.Abs() > maxFidelityDiff {
			problems = append(problems, fmt.Sprintf("%s p50: eventloop %d µs, nethttp %d µs: differ by %v, want within %v", name, el.P50, nh.P50, diff, maxFidelityDiff))
		}
		if diff := time.Duration(el.P99-nh.P99) * time.Microsecond; diff > maxFidelityDiff {
			problems = append(problems, fmt.Sprintf("%s p99: eventloop %d µs, nethttp %d µs: the loop is %v later, want at most %v (probe p99 %v)", name, el.P99, nh.P99, diff, maxFidelityDiff, wake.p99))
		}
	}
	return problems
}
