package recording

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// benchResults builds n realistic results spread over seconds at rate per
// second, each with gaps ITL gaps, from a seeded generator.
func benchResults(n, rate, gaps int, seed uint64) []*Result {
	rng := rand.New(rand.NewPCG(seed, 1))
	tags := []Tags{{Phase: "baseline", Class: "chat"}, {Phase: "fault", Fault: "kill", Class: "chat"}}
	out := make([]*Result, n)
	for i := range out {
		sent := time.Duration(i) * time.Second / time.Duration(rate)
		ttft := time.Duration(math.Exp(rng.NormFloat64()*0.5+math.Log(150e3))) * time.Microsecond
		itl := make([]uint32, gaps)
		var dec time.Duration
		for k := range itl {
			g := uint32(math.Exp(rng.NormFloat64()*0.3 + math.Log(25e3)))
			itl[k] = g
			dec += time.Duration(g) * time.Microsecond
		}
		out[i] = &Result{
			Seq: uint64(i), Tags: tags[i%len(tags)],
			Scheduled: sent, Dequeued: sent, Sent: sent + time.Duration(rng.IntN(200))*time.Microsecond,
			FirstToken: sent + ttft, End: sent + ttft + dec,
			ITLMicros: itl, Outcome: OutcomeOK, HTTPStatus: 200,
			InputTokens: 500 + rng.IntN(1000), OutputTokens: gaps + 1, ContentChunks: gaps + 1, UsageReported: true,
			FinishReason: "stop", OutputChars: 4 * (gaps + 1), NgramsTotal: gaps, NgramsRepeated: rng.IntN(3),
		}
	}
	return out
}

// BenchmarkRecord measures Record's cost per result (target < 2 µs and no
// allocation in steady state) for results with 0, 64 and 256 ITL gaps.
func BenchmarkRecord(b *testing.B) {
	for _, gaps := range []int{0, 64, 256} {
		b.Run("itl="+strconv.Itoa(gaps), func(b *testing.B) {
			const n = 50_000
			res := benchResults(n, 1000, gaps, 7)
			for range b.N {
				r := NewRecorder(Options{SLO: SLO{TTFT: 500 * time.Millisecond, TPOT: 50 * time.Millisecond}})
				for _, x := range res[:1000] { // warm up: histograms and first rows
					r.Record(x)
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				start := time.Now()
				cpu, ok := threadCPU(func() {
					for _, x := range res {
						r.Record(x)
					}
				})
				el := time.Since(start)
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(el.Nanoseconds())/n, "ns/result")
				if ok {
					b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/result")
				}
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/result")
			}
		})
	}
}

// BenchmarkRecordParallel measures Record from 16 goroutines at once (the
// lock's cost under contention), 64 ITL gaps per result: wall time per
// result and the CPU the whole process spent per result.
func BenchmarkRecordParallel(b *testing.B) {
	const n, workers = 64_000, 16
	res := benchResults(n, 1000, 64, 9)
	for range b.N {
		r := NewRecorder(Options{})
		start := time.Now()
		cpu, ok := processCPU(func() {
			// Workers take results in order, as results of a run arrive in
			// time order.
			var next atomic.Int64
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for i := next.Add(1) - 1; i < n; i = next.Add(1) - 1 {
						r.Record(res[i])
					}
				})
			}
			wg.Wait()
		})
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/n, "ns/result")
		if ok {
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/result")
		}
	}
}

// memBytes is the memory held by the series' rows and packed histograms.
func (s *Series) memBytes() int {
	n := cap(s.blocks)*int(unsafe.Sizeof(uintptr(0))) + len(s.blocks)*int(unsafe.Sizeof([seriesBlock]secRow{}))
	for i := range s.n {
		n += cap(s.peek(i).hist)
	}
	if s.open != nil {
		n += int(unsafe.Sizeof(*s.open))
	}
	return n + cap(s.buf)
}

// BenchmarkSeriesMemoryPerHour records 70 minutes of run at 100 req/s (100
// output tokens each) and reports the time series' memory per hour of run,
// counted from its structures and from the heap after GC.
func BenchmarkSeriesMemoryPerHour(b *testing.B) {
	const rate, gaps = 100, 99
	const warm, hour = 10 * 60 * rate, 60 * 60 * rate
	res := benchResults(1000, rate, gaps, 11)
	for range b.N {
		r := NewRecorder(Options{})
		var tmp Result
		record := func(i int) {
			tmp = *res[i%len(res)]
			shift := time.Duration(i)*time.Second/rate - tmp.Scheduled
			tmp.Scheduled += shift
			tmp.Dequeued += shift
			tmp.Sent += shift
			tmp.FirstToken += shift
			tmp.End += shift
			r.RequestStarted(tmp.Sent)
			r.RequestEnded(tmp.End)
			r.Record(&tmp)
		}
		for i := range warm {
			record(i)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		seriesBefore := r.series.memBytes()
		for i := warm; i < warm+hour; i++ {
			record(i)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		seriesBytes := r.series.memBytes() - seriesBefore
		b.ReportMetric(float64(seriesBytes), "series-bytes/hour")
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)), "heap-bytes/hour")
		b.ReportMetric(float64(seriesBytes)/3600, "bytes/second-row")
		runtime.KeepAlive(r)
	}
}

// BenchmarkSnapshot measures the live view (once per second in the CLI):
// a 10-second window merge over a busy series.
func BenchmarkSnapshot(b *testing.B) {
	res := benchResults(20_000, 1000, 64, 13)
	r := NewRecorder(Options{})
	for _, x := range res {
		r.Record(x)
	}
	now := res[len(res)-1].End
	const n = 200
	for range b.N {
		cpu, ok := threadCPU(func() {
			for range n {
				r.Snapshot(now)
			}
		})
		if ok {
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/snapshot")
		}
	}
}
