package experiments

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// Probe limits.
const (
	// maxProbesInFlight bounds the probes waiting for an answer at once: a
	// probe due while this many wait is recorded as dropped (never sent),
	// so a stalled service cannot pile up probes.
	maxProbesInFlight = 32
	// probeRequestTimeout bounds one probe, send to end of stream.
	probeRequestTimeout = 2 * time.Minute
)

// probeAnswer is what one probe brought back.
//
// A probe counts in the phase (and fault) in force when its answer ended,
// not when it was sent as the load's results do, unless a fault was in
// force at some time while it streamed: then it counts in that fault's
// window (the last one's). An answer in flight when a fault struck (a
// replica killed, a proxy corrupting) or was reverted was shaped by it,
// and says nothing of the baseline or of the recovery after.
type probeAnswer struct {
	seq      int
	prompt   int
	at       time.Duration // answer ended (scheduled, for one never sent)
	phase    string
	fault    string
	endpoint string
	// answered says the probe brought an answer back to compare: it ended
	// ok, or failed with an integrity class (the stream arrived, but
	// corrupted: what a user would have read). A probe that got no answer
	// (refused, reset, timed out, dropped) is counted by the probes'
	// error_rate, not compared.
	answered bool
	text     string
	chunks   []string
	// tokens says the stream gave one token per content chunk (usage
	// reported and equal to the chunks), so chunk positions are token
	// positions.
	tokens bool
}

// prober sends the consistency probes: one request every 1/rate seconds
// of the run clock, asking the prompts in turn at temperature 0 with the
// seed, spread over the endpoints so that each prompt visits each one. It
// records their results in its own recorder (class probe), apart from the
// load's, and keeps each answer for the comparison (consistency.go).
//
// The prober owns its goroutines: run starts them, and the function it
// returns stops the schedule and waits for every probe in flight.
type prober struct {
	cfg   spec.Probes // with its defaults
	chat  bool
	model string
	// targets are the URLs probes are sent to (through the fault proxies,
	// as the load's); route, when set, picks a Kubernetes pod instead.
	targets []string
	route   func(int) (string, string, error)
	// tag sets a probe's phase, fault and endpoint tag at its send time;
	// phaseOf is the phase and fault an answer that streamed between two
	// times of the run clock counts in (timeline.shaped).
	tag     func(at time.Duration, tags *recording.Tags)
	phaseOf func(from, to time.Duration) (phase, fault string)
	c       *client.Client
	clock   *recording.RunClock
	rec     *recording.Recorder
	grace   time.Duration

	mu      sync.Mutex
	answers []probeAnswer
}

// newProber returns the prober of cfg (with its defaults) for a load on
// clock; the client options are the load's (key, headers, dial hook).
func newProber(cfg spec.Probes, chat bool, model string, targets []string, clock *recording.RunClock, copts client.Options, grace time.Duration) (*prober, error) {
	copts.Clock = clock
	copts.Concurrency = maxProbesInFlight
	copts.RequestTimeout = probeRequestTimeout
	copts.Seed = uint64(*cfg.Seed) ^ 0x70726f6265 // "probe": request ids apart from the load's
	c, err := client.New(copts)
	if err != nil {
		return nil, fmt.Errorf("probes: %w", err)
	}
	return &prober{cfg: cfg, chat: chat, model: model, targets: targets, c: c, clock: clock,
		rec: recording.NewRecorder(recording.Options{}), grace: grace}, nil
}

// request builds the probe request of prompt i.
func (p *prober) request(i int) *workload.Request {
	text := p.cfg.Prompts[i]
	seed := *p.cfg.Seed
	req := &workload.Request{Chat: p.chat, Model: p.model, MaxTokens: p.cfg.MaxTokens, Stream: true, Seed: &seed,
		Extra: map[string]any{"temperature": 0}}
	if p.chat {
		req.Messages = []workload.Message{{Role: "user", Content: text}}
		req.PromptTokens = workload.EstimateChatTokens(req.Messages)
	} else {
		req.Prompt = text
		req.PromptTokens = workload.EstimateTokens(text)
	}
	return req
}

// run starts the schedule on ctx and returns the function that stops it:
// nothing more is sent, the probes in flight get the load's grace to end,
// and then are cut (recorded as timeouts). It returns once every probe
// goroutine has returned.
func (p *prober) run(ctx context.Context) (stop func()) {
	schedCtx, endSchedule := context.WithCancel(ctx)
	reqCtx, cutRequests := context.WithCancelCause(context.WithoutCancel(ctx))
	slots := make(chan struct{}, maxProbesInFlight)
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		start := p.clock.Now()
		every := time.Duration(float64(time.Second) / p.cfg.Rate)
		for seq := 0; ; seq++ {
			at := start + time.Duration(seq)*every
			t := time.NewTimer(time.Until(p.clock.Time(at)))
			select {
			case <-schedCtx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			select {
			case slots <- struct{}{}:
			default:
				p.dropped(seq, at)
				continue
			}
			wg.Go(func() {
				defer func() { <-slots }()
				p.send(reqCtx, seq, at)
			})
		}
	}()
	return func() {
		endSchedule()
		<-done
		waited := make(chan struct{})
		go func() { wg.Wait(); close(waited) }()
		t := time.NewTimer(p.grace)
		select {
		case <-waited:
		case <-t.C:
		}
		t.Stop()
		cutRequests(client.ErrRunEnded)
		<-waited
		p.c.Close()
	}
}

// promptOf and endpointOf say which prompt probe seq asks and where: the
// prompts in turn, and the endpoints shifted once per round of prompts, so
// that every prompt visits every endpoint.
func (p *prober) promptOf(seq int) int { return seq % len(p.cfg.Prompts) }

func (p *prober) endpointOf(seq int) int {
	return (seq + seq/len(p.cfg.Prompts)) % len(p.targets)
}

// send sends probe seq (due at at), records its result and keeps its answer.
func (p *prober) send(ctx context.Context, seq int, at time.Duration) {
	res := &recording.Result{Seq: uint64(seq), Scheduled: at, Dequeued: at, Tags: recording.Tags{Class: spec.ProbeClass}}
	ep := p.endpointOf(seq)
	url := p.targets[ep]
	res.Tags.Endpoint = spec.EndpointTag(url)
	var unroutable error
	if p.route != nil {
		var tag string
		if url, tag, unroutable = p.route(ep); unroutable == nil {
			res.Tags.Endpoint = tag
		}
	}
	now := p.clock.Now()
	p.tag(now, &res.Tags)
	req := p.request(p.promptOf(seq))
	p.rec.RequestStarted(now)
	var chunks []string
	var out client.Output
	if unroutable != nil {
		p.c.Unreachable(res, req, unroutable)
	} else {
		out = p.c.DoOutput(ctx, url, req, res, func(text []byte) {
			if len(text) > 0 {
				chunks = append(chunks, string(text))
			}
		})
	}
	p.rec.RequestEnded(res.End)
	p.rec.Record(res)
	phase, fault := p.phaseOf(now, res.End)
	a := probeAnswer{seq: seq, prompt: p.promptOf(seq), at: res.End, phase: phase, fault: fault, endpoint: res.Tags.Endpoint,
		answered: res.Outcome == recording.OutcomeOK || (res.Outcome == recording.OutcomeFailed && recording.IsIntegrity(res.Class)),
		text:     out.Text, chunks: chunks,
		tokens: res.UsageReported && res.OutputTokens == res.ContentChunks && len(chunks) == res.ContentChunks}
	p.keep(a)
}

// dropped records probe seq, due at at, as dropped: too many probes were
// waiting for an answer.
func (p *prober) dropped(seq int, at time.Duration) {
	res := &recording.Result{Seq: uint64(seq), Scheduled: at, End: max(p.clock.Now(), at), Outcome: recording.OutcomeDropped,
		Tags: recording.Tags{Class: spec.ProbeClass, Endpoint: spec.EndpointTag(p.targets[p.endpointOf(seq)])}}
	p.tag(at, &res.Tags)
	p.rec.Record(res)
	p.keep(probeAnswer{seq: seq, prompt: p.promptOf(seq), at: at, phase: res.Tags.Phase, fault: res.Tags.Fault, endpoint: res.Tags.Endpoint})
}

func (p *prober) keep(a probeAnswer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answers = append(p.answers, a)
}

// results returns every probe's answer so far, in send order.
func (p *prober) results() []probeAnswer {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]probeAnswer, len(p.answers))
	copy(out, p.answers)
	sortAnswers(out)
	return out
}

// startProbes starts the experiment's consistency probes on the load's
// clock, sent where the load goes (through the fault proxies), and returns
// the function that stops them and waits for them; it does nothing when
// the experiment asks for no probes.
func (r *run) startProbes(ctx context.Context, clock *recording.RunClock) (stop func()) {
	cfg := r.p.spec.Probes
	if cfg == nil {
		return func() {}
	}
	copts := r.clientOptions()
	targets := make([]string, len(r.endpoints))
	for i, e := range r.endpoints {
		targets[i] = e.load
	}
	pr, err := newProber(*cfg, r.p.wc.API != workload.APICompletions, r.model, targets, clock, copts, r.p.spec.Workload.Grace.D())
	if err != nil {
		r.judge.fail(err)
		return func() {}
	}
	if r.kube != nil && r.kube.t.URL == "" {
		pr.route = r.kube.route
	}
	pr.phaseOf = r.tl.shaped
	pr.tag = func(at time.Duration, tags *recording.Tags) {
		tags.Phase, tags.Fault = r.tl.at(at)
		if u, ok := r.tagURL[tags.Endpoint]; ok {
			tags.Endpoint = u
		}
	}
	r.probes = pr
	r.out.printf("consistency probes: %g per second, %d prompt(s), max_tokens %d, temperature 0, seed %d", cfg.Rate, len(cfg.Prompts), cfg.MaxTokens, *cfg.Seed)
	return pr.run(ctx)
}
