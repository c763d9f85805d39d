package report

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// synthRun records n requests, 100 per second, through the real recorder:
// ttft lognormal around 200 ms, 16 output tokens with gaps lognormal around
// 20 ms, every 50th request failing with HTTP 503. scale multiplies every
// latency (1.3: a server 30% slower); seed draws the values, so two seeds
// give two runs of one configuration.
func synthRun(tb testing.TB, seed uint64, scale float64, n int, tags recording.Tags) *Document {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	rec := recording.NewRecorder(recording.Options{SLO: recording.SLO{TTFT: 200 * time.Millisecond, TPOT: 70 * time.Millisecond}})
	lognormal := func(median time.Duration, sigma float64) time.Duration {
		return time.Duration(float64(median) * math.Exp(sigma*rng.NormFloat64()) * scale)
	}
	gaps := make([]uint32, 15)
	var last time.Duration
	for i := range n {
		sent := time.Duration(i)*10*time.Millisecond + time.Millisecond
		res := &recording.Result{Seq: uint64(i), Tags: tags, Scheduled: sent, Dequeued: sent, Sent: sent, HTTPStatus: 200,
			InputTokens: 200, UsageReported: true, FinishReason: "stop"}
		rec.RequestStarted(sent)
		if i%50 == 49 {
			res.End = sent + lognormal(50*time.Millisecond, 0.2)
			res.Outcome, res.Class, res.HTTPStatus = recording.OutcomeFailed, recording.ClassHTTP5xx, 503
		} else {
			res.FirstToken = sent + lognormal(200*time.Millisecond, 0.3)
			end := res.FirstToken
			for j := range gaps {
				g := lognormal(20*time.Millisecond, 0.25)
				gaps[j] = uint32(g / time.Microsecond)
				end += g
			}
			res.ITLMicros = gaps
			res.End = end
			res.Outcome, res.OutputTokens, res.ContentChunks, res.OutputChars = recording.OutcomeOK, 16, 16, 64
		}
		rec.RequestEnded(res.End)
		rec.Record(res)
		last = max(last, res.End)
	}
	d, err := Build(Meta{ToolVersion: "test", Name: "synthetic", StartedAt: startedAt, Seed: int64(seed), Config: map[string]any{"scale": scale}},
		rec.Finish(last.Truncate(time.Second)+time.Second))
	if err != nil {
		tb.Fatal(err)
	}
	return d
}
