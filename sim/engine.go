package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/llmchaos/llmchaos/internal/promexpo"
)

// freeRefresh is how long the engine trusts its last reading of the device's
// free memory before it reads it again.
const freeRefresh = 100 * time.Millisecond

// Request is one generation the transport asks of the engine.
type Request struct {
	PromptTokens int    // prompt length in tokens (see CountTokens), at least 1
	MaxTokens    int    // completion cap; 0 means what MaxModelLen leaves after the prompt
	MinTokens    int    // the sequence does not stop before this many tokens
	IgnoreEOS    bool   // produce exactly MaxTokens tokens
	Seed         *int64 // per-request seed; nil draws one from the engine's seeded generator (unless Greedy)
	// PromptHash identifies the prompt's text: the output of a request
	// with a seed, or of a greedy one, is a function of (PromptHash,
	// Seed), the same on every replica, as a model's greedy output is.
	PromptHash uint64
	// Greedy is temperature 0: without a seed the output is still
	// determined by the prompt.
	Greedy bool

	// ResumeFrom continues an answer generated elsewhere: a router that
	// migrated the request after its replica died sends the first
	// ResumeFrom tokens of the answer back as context (Dynamo's request
	// migration), and the stream generates the rest of the same answer:
	// its tokens are those of index ResumeFrom on, its prompt is longer by
	// ResumeFrom and its max_tokens shorter. 0: a new request.
	ResumeFrom int

	// Arrival is the engine time the request arrived, before the transport
	// parsed it; 0, or a time after the Submit call's now, means now. TTFT,
	// queue time and end-to-end latency count from it, and a paced sequence
	// admitted without queueing has its first token due at Arrival + TTFT, so
	// the transport's own overhead does not show in the latencies.
	Arrival time.Duration
}

// ErrQueueFull is returned by Submit when the waiting queue holds MaxWaiting
// sequences already (HTTP 429).
var ErrQueueFull = errors.New("waiting queue is full")

// ErrEngineDead is returned by Submit once the engine has died; errors that
// wrap it also wrap the cause (an *OOMError).
var ErrEngineDead = errors.New("engine is dead")

// ContextLengthError says prompt + max_tokens exceeds MaxModelLen (HTTP 400).
type ContextLengthError struct {
	PromptTokens int
	MaxTokens    int
	MaxModelLen  int
}

// Error is worded as vLLM's.
func (e *ContextLengthError) Error() string {
	return fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
		e.MaxModelLen, e.PromptTokens+e.MaxTokens, e.PromptTokens, e.MaxTokens)
}

// InvalidRequestError says a request's parameters are unusable (HTTP 400).
type InvalidRequestError struct{ Message string }

// Error returns the message.
func (e *InvalidRequestError) Error() string { return e.Message }

// Option configures an Engine.
type Option func(*engineOptions)

type engineOptions struct {
	latency LatencyModel
	reg     *promexpo.Registry
}

// WithLatency replaces the latency model Config.Latency names.
func WithLatency(m LatencyModel) Option { return func(o *engineOptions) { o.latency = m } }

// WithRegistry registers the engine's vLLM metrics on reg. Without it the
// metrics are kept but exported nowhere.
func WithRegistry(reg *promexpo.Registry) Option {
	return func(o *engineOptions) { o.reg = reg }
}

// Stats is a snapshot of the engine's state.
type Stats struct {
	Running     int
	Waiting     int
	UsedBlocks  int
	TotalBlocks int
	Preemptions int64
	Slowdown    float64
	Now         time.Duration // engine time of the snapshot
	HangUntil   time.Duration // engine time until which no token is produced
	FreeReads   int           // how often the device's free memory was read
	Dead        error
}

// Engine is the simulated vLLM engine: a continuous-batching scheduler over a
// paged KV cache, priced by a LatencyModel. It is a pure state machine on an
// engine clock (a time.Duration since an arbitrary epoch that the caller
// advances): every method takes the current engine time, nothing sleeps, and
// the same seed and the same calls give the same tokens at the same times.
// It is not safe for concurrent use; Live drives it on the wall clock.
type Engine struct {
	cfg        Config
	mem        Memory
	lat        LatencyModel
	paced      bool
	ttft       time.Duration
	itl        time.Duration
	rng        *rand.Rand
	m          *metrics
	freeCached int64 // bytes free at the last reading

	totalBlocks int
	freeBlocks  int
	now         time.Duration
	nextID      uint64
	nextOrder   uint64
	waiting     []*Stream
	running     []*Stream // admission order
	due         seqHeap   // paced mode: running sequences by next token time
	slowdown    float64
	hangUntil   time.Duration
	holdAdmit   bool // paced mode: admissions wait for the hang to end
	submitting  *Stream
	published   []*Stream // streams with a sink that published, each once, until taken

	stepActive bool
	stepEnd    time.Duration
	stepSeqs   []*Stream
	idleAt     time.Duration

	freeReadAt  time.Duration
	freeReads   int
	preemptions int64
	genPending  int
	dead        error
	released    bool
}

// NewEngine sizes the KV cache from mem as vLLM does — blocks = (total ×
// GPUUtilization − WeightBytes) / (KVBytesPerToken × BlockSize) — and
// reserves the weights and the whole pool on mem. It returns a *StartError
// when mem has too little free memory or is too small for the model.
func NewEngine(cfg Config, mem Memory, opts ...Option) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	var o engineOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.latency == nil {
		if cfg.Latency == LatencyConstant {
			o.latency = Constant{TTFT: cfg.TTFT, ITL: cfg.ITL}
		} else {
			p := DefaultProfile()
			p.WeightBytes = float64(cfg.WeightBytes)
			p.KVBytesPerToken = float64(cfg.KVBytesPerToken)
			o.latency = p
		}
	}
	m, err := newMetrics(o.reg, cfg.Model)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:      cfg,
		mem:      mem,
		lat:      o.latency,
		rng:      rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6c6c6d6368616f73)), // "llmchaos"
		m:        m,
		slowdown: 1,
	}
	e.ttft, e.itl, e.paced = o.latency.Paced()
	if err := e.reserve(); err != nil {
		return nil, err
	}
	e.sync()
	return e, nil
}

// reserve sizes the KV pool and reserves weights and pool on the device.
func (e *Engine) reserve() error {
	total := e.mem.Total()
	budget := int64(float64(total) * e.cfg.GPUUtilization)
	blockBytes := e.cfg.KVBytesPerToken * int64(e.cfg.BlockSize)
	pool := budget - e.cfg.WeightBytes
	blocks := int64(0)
	if pool > 0 {
		blocks = pool / blockBytes
	}
	if blocks*int64(e.cfg.BlockSize) < int64(e.cfg.MaxModelLen) {
		return &StartError{Total: total, Need: e.cfg.WeightBytes + int64(e.cfg.MaxModelLen)*e.cfg.KVBytesPerToken,
			Reason: fmt.Sprintf("%v × %s leaves %s after %s of weights: room for %d KV tokens, fewer than max-model-len %d",
				e.cfg.GPUUtilization, FormatBytes(total), FormatBytes(max(pool, 0)), FormatBytes(e.cfg.WeightBytes),
				blocks*int64(e.cfg.BlockSize), e.cfg.MaxModelLen)}
	}
	kv := blocks * blockBytes
	need := e.cfg.WeightBytes + kv
	free, err := e.mem.Free()
	if err != nil {
		return fmt.Errorf("read free GPU memory: %w", err)
	}
	if free < need {
		return &StartError{Need: need, Free: free, Total: total}
	}
	if err := e.mem.Reserve(e.cfg.WeightBytes, "weights"); err != nil {
		return &StartError{Need: need, Free: free, Total: total, Err: err}
	}
	if err := e.mem.Reserve(kv, "kv-cache"); err != nil {
		return errors.Join(&StartError{Need: need, Free: free, Total: total, Err: err}, e.mem.Release())
	}
	e.totalBlocks = int(blocks)
	e.freeBlocks = int(blocks)
	e.readFree(0)
	return nil
}

// Close releases the engine's GPU memory. It is idempotent.
func (e *Engine) Close() error {
	if e.released {
		return nil
	}
	e.released = true
	if err := e.mem.Release(); err != nil {
		return fmt.Errorf("release GPU memory: %w", err)
	}
	return nil
}

// Err returns why the engine died (an *OOMError), or nil while it lives.
func (e *Engine) Err() error { return e.dead }

// Stats returns a snapshot of the engine's state.
func (e *Engine) Stats() Stats {
	return Stats{
		Running:     len(e.running),
		Waiting:     len(e.waiting),
		UsedBlocks:  e.totalBlocks - e.freeBlocks,
		TotalBlocks: e.totalBlocks,
		Preemptions: e.preemptions,
		Slowdown:    e.slowdown,
		Now:         e.now,
		HangUntil:   e.hangUntil,
		FreeReads:   e.freeReads,
		Dead:        e.dead,
	}
}

// Submit queues a request at engine time now and returns its stream. It fails
// with *InvalidRequestError or *ContextLengthError for bad parameters,
// ErrQueueFull when the waiting queue is full and an error wrapping
// ErrEngineDead after a death.
func (e *Engine) Submit(now time.Duration, req Request) (*Stream, error) {
	now = e.advance(now)
	defer e.sync()
	if e.dead != nil {
		return nil, fmt.Errorf("%w: %w", ErrEngineDead, e.dead)
	}
	s, err := e.newStream(now, req)
	if err != nil {
		return nil, err
	}
	e.waiting = append(e.waiting, s)
	if !e.paced && !e.stepActive {
		e.idleAt = now
	}
	e.submitting = s
	e.schedule(now)
	e.submitting = nil
	if s.state == stateWaiting && len(e.waiting) > e.cfg.MaxWaiting {
		e.removeWaiting(s)
		s.state = stateDone
		return nil, ErrQueueFull
	}
	return s, nil
}

// newStream validates req and decides the stream's output length and text.
func (e *Engine) newStream(now time.Duration, req Request) (*Stream, error) {
	if req.PromptTokens < 1 {
		return nil, &InvalidRequestError{Message: "the prompt is empty"}
	}
	if req.MaxTokens < 0 || req.MinTokens < 0 {
		return nil, &InvalidRequestError{Message: fmt.Sprintf("max_tokens (%d) and min_tokens (%d) must not be negative", req.MaxTokens, req.MinTokens)}
	}
	maxTokens := req.MaxTokens
	if maxTokens == 0 {
		maxTokens = e.cfg.MaxModelLen - req.PromptTokens
	}
	if req.PromptTokens+maxTokens > e.cfg.MaxModelLen || maxTokens < 1 {
		return nil, &ContextLengthError{PromptTokens: req.PromptTokens, MaxTokens: max(maxTokens, 1), MaxModelLen: e.cfg.MaxModelLen}
	}
	if req.MinTokens > maxTokens {
		return nil, &InvalidRequestError{Message: fmt.Sprintf("min_tokens (%d) must be less than or equal to max_tokens (%d)", req.MinTokens, maxTokens)}
	}
	var seed uint64
	switch {
	case req.Seed != nil:
		seed = mix64(uint64(*req.Seed)) ^ req.PromptHash
	case req.Greedy:
		seed = mix64(req.PromptHash ^ greedySalt)
	default:
		seed = e.rng.Uint64()
	}
	outLen, reason := maxTokens, FinishLength
	if !req.IgnoreEOS {
		if n := max(drawOutputLength(seed, e.cfg.MeanOutputTokens), req.MinTokens); n <= maxTokens {
			outLen, reason = n, FinishStop
		}
	}
	prompt, skip := req.PromptTokens, 0
	if k := req.ResumeFrom; k != 0 {
		if k < 0 || k >= maxTokens {
			return nil, &InvalidRequestError{Message: fmt.Sprintf("resume from token %d: max_tokens %d leaves nothing to generate", k, maxTokens)}
		}
		// A sampled answer (no seed, not greedy) drew its own length here;
		// one that had already run past it ends with its next token.
		if k >= outLen {
			outLen = k + 1
			if outLen < maxTokens {
				reason = FinishStop
			}
		}
		prompt, skip, outLen, maxTokens = prompt+k, k, outLen-k, maxTokens-k
	}
	arrival := now
	if req.Arrival > 0 && req.Arrival < now {
		arrival = req.Arrival
	}
	e.nextID++
	return &Stream{
		id:        e.nextID,
		prompt:    prompt,
		maxTokens: maxTokens,
		outLen:    outLen,
		reason:    reason,
		seed:      seed,
		skip:      skip,
		arrival:   arrival,
		numTokens: prompt,
		heapIdx:   -1,
		ready:     make(chan struct{}, 1),
	}, nil
}

// Cancel ends s at engine time now and frees its KV blocks at once.
func (e *Engine) Cancel(now time.Duration, s *Stream) {
	now = e.advance(now)
	defer e.sync()
	switch s.state {
	case stateDone:
		return
	case stateWaiting:
		e.removeWaiting(s)
	case stateRunning:
		e.removeRunning(s)
	}
	s.state = stateDone
	e.publish(s, FinishCancelled)
	e.schedule(now)
}

// Advance processes everything due at or before engine time now and returns
// when the next event is due; ok is false when nothing is scheduled (the
// engine is idle or dead).
func (e *Engine) Advance(now time.Duration) (next time.Duration, ok bool) {
	e.advance(now)
	defer e.sync()
	return e.nextEvent()
}

// TakePublished appends to dst the streams with a sink (Stream.SetSink)
// that published progress since the last call, in the order they first
// did, and empties the engine's list; it returns the extended dst. The
// caller delivers them by calling each one's sink, after it has stopped
// using the engine if the sinks may run concurrently with it (Live.Run
// does so after every Advance, outside its lock). A stream published many
// times before it is taken appears once, so the list is bounded by the
// number of streams with a sink, and reusing dst allocates nothing.
func (e *Engine) TakePublished(dst []*Stream) []*Stream {
	for _, s := range e.published {
		s.collected = false
	}
	dst = append(dst, e.published...)
	clear(e.published)
	e.published = e.published[:0]
	return dst
}

// SetSlowdown multiplies every step time, TTFT and ITL scheduled from now on
// by factor (1 is normal speed).
func (e *Engine) SetSlowdown(now time.Duration, factor float64) error {
	if !(factor > 0) || math.IsInf(factor, 0) {
		return &InvalidRequestError{Message: fmt.Sprintf("slowdown factor %v must be a positive number", factor)}
	}
	e.advance(now)
	e.slowdown = factor
	return nil
}

// Hang stops all token production from now for d, as a stuck GPU would:
// every pending token and step is pushed back by the hang.
func (e *Engine) Hang(now time.Duration, d time.Duration) {
	now = e.advance(now)
	defer e.sync()
	until := now + d
	if d <= 0 || until <= e.hangUntil || e.dead != nil {
		return
	}
	shift := until - max(e.hangUntil, now)
	e.hangUntil = until
	if e.paced {
		for _, s := range e.due {
			s.nextAt += shift
		}
		return
	}
	if e.stepActive {
		e.stepEnd += shift
	}
}

// Crash kills the engine at now as an out-of-memory would.
func (e *Engine) Crash(now time.Duration) {
	e.advance(now)
	defer e.sync()
	if e.dead != nil {
		return
	}
	free, _ := e.mem.Free()
	e.die(&OOMError{Need: free + e.cfg.ActivationBytesPerToken, Free: free, Total: e.mem.Total(), Tokens: len(e.running) + 1, Injected: true})
}

// advance runs every event due at or before now and returns now, clamped so
// that engine time never goes backwards.
func (e *Engine) advance(now time.Duration) time.Duration {
	now = max(now, e.now)
	e.now = now
	if e.dead != nil {
		return now
	}
	if e.paced {
		e.advancePaced(now)
	} else {
		e.advanceStepped(now)
	}
	return now
}

// nextEvent returns the time of the next scheduled event.
func (e *Engine) nextEvent() (time.Duration, bool) {
	if e.dead != nil {
		return 0, false
	}
	if e.paced {
		next, ok := time.Duration(0), false
		if len(e.due) > 0 {
			next, ok = e.due[0].nextAt, true
		}
		if e.holdAdmit && (!ok || e.hangUntil < next) {
			next, ok = e.hangUntil, true
		}
		return next, ok
	}
	if e.stepActive {
		return e.stepEnd, true
	}
	if len(e.waiting) > 0 || len(e.running) > 0 {
		return max(e.idleAt, e.hangUntil), true
	}
	return 0, false
}

// schedule lets the scheduler act at now after the queues changed.
func (e *Engine) schedule(now time.Duration) {
	if e.dead != nil {
		return
	}
	if e.paced {
		e.admitPaced(now)
		return
	}
	e.advanceStepped(now)
}

// --- paced mode (Constant): every sequence on its own absolute schedule ---

func (e *Engine) advancePaced(now time.Duration) {
	for e.dead == nil {
		if e.holdAdmit && e.hangUntil <= now && (len(e.due) == 0 || e.hangUntil <= e.due[0].nextAt) {
			e.holdAdmit = false
			e.admitPaced(e.hangUntil)
			continue
		}
		if len(e.due) == 0 || e.due[0].nextAt > now {
			return
		}
		e.pacedToken(e.due[0].nextAt, e.due[0])
	}
}

// admitPaced moves waiting sequences to running while there is room; each
// one's first token is due TTFT later.
func (e *Engine) admitPaced(t time.Duration) {
	if t < e.hangUntil {
		e.holdAdmit = len(e.waiting) > 0
		return
	}
	for len(e.waiting) > 0 && len(e.running) < e.cfg.MaxNumSeqs && e.dead == nil {
		s := e.waiting[0]
		// Room for the context and the first token it will produce, so that
		// a sequence that preempted itself waits for a block to come free.
		need := e.blocksFor(s.numTokens + 1)
		if need > e.freeBlocks {
			return
		}
		if !e.activationFits(t, s.numTokens+len(e.running)) {
			return
		}
		e.popWaiting()
		e.allocate(s, need)
		s.computed = s.numTokens
		e.admit(t, s)
		at := t
		if s == e.submitting {
			// Admitted on arrival: nothing queued it.
			at = s.arrival
		}
		s.nextAt = max(at+e.scaled(e.ttft), t)
		heap.Push(&e.due, s)
	}
}

// pacedToken produces s's next token at t.
func (e *Engine) pacedToken(t time.Duration, s *Stream) {
	// Every running sequence decodes in the same modelled forward pass.
	if !e.activationFits(t, len(e.running)) {
		return
	}
	if need := e.blocksFor(s.numTokens+1) - s.blocks; need > 0 {
		if !e.makeRoom(s, need) {
			e.admitPaced(t)
			return
		}
		e.allocate(s, need)
	}
	s.computed = s.numTokens + 1
	if e.emit(t, s) {
		e.admitPaced(t)
		return
	}
	s.nextAt = t + e.scaled(e.itl)
	heap.Fix(&e.due, s.heapIdx)
}

// --- stepped mode (Profile): vLLM's continuous batching ---

func (e *Engine) advanceStepped(now time.Duration) {
	for e.dead == nil {
		if e.stepActive {
			if e.stepEnd > now {
				return
			}
			e.endStep(e.stepEnd)
			continue
		}
		if len(e.waiting) == 0 && len(e.running) == 0 {
			return
		}
		start := max(e.idleAt, e.hangUntil)
		if start > now {
			return
		}
		if !e.beginStep(start) {
			return
		}
	}
}

// beginStep schedules one step at t as vLLM's scheduler does: running
// sequences first (one decode token each, or their next prefill chunk),
// preempting the newest running sequence when a block is missing, then — if
// nothing was preempted — waiting sequences while the token budget, the
// MaxNumSeqs limit and free blocks allow. It reports whether a step started.
func (e *Engine) beginStep(t time.Duration) bool {
	budget := e.cfg.MaxBatchedTokens
	e.stepSeqs = e.stepSeqs[:0]
	var b Batch
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
		n := min(s.numTokens-s.computed, budget)
		need := e.blocksFor(s.computed+n) - s.blocks
		if need > e.freeBlocks {
			preempted = true
			if !e.makeRoom(s, need) {
				break
			}
		}
		e.allocate(s, need)
		e.addToStep(s, n, &b)
		budget -= n
	}
	for !preempted && budget > 0 && len(e.waiting) > 0 && len(e.running) < e.cfg.MaxNumSeqs {
		s := e.waiting[0]
		n := min(s.numTokens-s.computed, budget)
		need := e.blocksFor(s.computed+n) - s.blocks
		if need > e.freeBlocks {
			break
		}
		e.popWaiting()
		e.allocate(s, need)
		e.admit(t, s)
		e.addToStep(s, n, &b)
		budget -= n
	}
	if len(e.stepSeqs) == 0 {
		return false
	}
	if !e.activationFits(t, b.Tokens()) {
		return false
	}
	e.stepActive = true
	e.stepEnd = t + e.scaled(e.lat.StepTime(b))
	return true
}

func (e *Engine) addToStep(s *Stream, n int, b *Batch) {
	if s.generated > 0 && n == 1 && s.computed == s.numTokens-1 {
		b.DecodeTokens++
	} else {
		b.PrefillTokens += n
	}
	b.ContextTokens += s.computed + n
	s.scheduled = n
	e.stepSeqs = append(e.stepSeqs, s)
}

// endStep completes the step at t: sequences whose context is fully computed
// sample a token.
func (e *Engine) endStep(t time.Duration) {
	e.stepActive = false
	e.idleAt = t
	for _, s := range e.stepSeqs {
		if s.state != stateRunning || s.scheduled == 0 {
			continue // cancelled during the step
		}
		s.computed += s.scheduled
		s.scheduled = 0
		if s.computed == s.numTokens {
			e.emit(t, s)
		}
	}
	e.stepSeqs = e.stepSeqs[:0]
}

// --- shared bookkeeping ---

// admit makes s running at t.
func (e *Engine) admit(t time.Duration, s *Stream) {
	s.state = stateRunning
	e.nextOrder++
	s.order = e.nextOrder
	e.running = append(e.running, s)
	if !s.admitted {
		s.admitted = true
		queued := t - s.arrival
		if s == e.submitting {
			queued = 0
		}
		e.m.queue.Observe(queued.Seconds())
	}
}

// emit produces s's next token at t and reports whether s is now finished.
func (e *Engine) emit(t time.Duration, s *Stream) bool {
	if e.cfg.Divergence == DivergenceBatch && len(e.running) >= e.cfg.DivergenceMinBatch {
		s.divergeAtTie(s.generated, len(e.running))
	}
	s.generated++
	s.numTokens++
	if s.generated == 1 {
		e.m.ttft.Observe((t - s.arrival).Seconds())
		e.m.promptTokens.Add(float64(s.prompt))
	} else {
		e.m.itl.Observe((t - s.lastTok).Seconds())
	}
	s.lastTok = t
	e.genPending++
	if s.generated < s.outLen {
		e.publish(s, FinishNone)
		return false
	}
	e.removeRunning(s)
	s.state = stateDone
	e.m.success[s.reason].Inc()
	e.m.e2e.Observe((t - s.arrival).Seconds())
	e.publish(s, s.reason)
	return true
}

// publish makes s's generated count and fin visible to its consumer, and
// tells it: on Ready, or, when s has a sink, by collecting s for the caller
// to deliver (TakePublished). A stream is collected once however often it
// publishes before it is taken, so the list never holds more entries than
// there are streams with a sink.
func (e *Engine) publish(s *Stream, fin Finish) {
	s.pub.Store(uint64(uint32(s.generated)) | uint64(fin)<<32)
	if s.sink.Load() == nil {
		select {
		case s.ready <- struct{}{}:
		default:
		}
		return
	}
	if !s.collected {
		s.collected = true
		e.published = append(e.published, s)
	}
}

// makeRoom preempts the newest running sequences until need blocks are free
// for s. It reports false when s itself had to be preempted.
func (e *Engine) makeRoom(s *Stream, need int) bool {
	for need > e.freeBlocks {
		victim := e.running[len(e.running)-1]
		e.preempt(victim)
		if victim == s {
			return false
		}
	}
	return true
}

// preempt frees s's blocks and puts it back at the front of the waiting
// queue; it will recompute its whole context (vLLM's recompute preemption).
func (e *Engine) preempt(s *Stream) {
	if e.cfg.Divergence == DivergencePreempt && s.generated > 0 {
		s.diverge(s.generated, divergePreemptSalt)
	}
	e.removeRunning(s)
	s.state = stateWaiting
	s.computed = 0
	s.scheduled = 0
	e.waiting = append(e.waiting, nil)
	copy(e.waiting[1:], e.waiting)
	e.waiting[0] = s
	e.preemptions++
	e.m.preemptions.Inc()
}

// removeRunning takes s out of the running set and frees its blocks.
func (e *Engine) removeRunning(s *Stream) {
	for i, r := range e.running {
		if r == s {
			e.running = append(e.running[:i], e.running[i+1:]...)
			break
		}
	}
	if s.heapIdx >= 0 {
		heap.Remove(&e.due, s.heapIdx)
	}
	e.freeBlocks += s.blocks
	s.blocks = 0
}

func (e *Engine) removeWaiting(s *Stream) {
	for i, w := range e.waiting {
		if w == s {
			e.waiting = append(e.waiting[:i], e.waiting[i+1:]...)
			return
		}
	}
}

func (e *Engine) popWaiting() {
	e.waiting[0] = nil
	e.waiting = e.waiting[1:]
}

func (e *Engine) allocate(s *Stream, n int) {
	if n > 0 {
		e.freeBlocks -= n
		s.blocks += n
	}
}

func (e *Engine) blocksFor(tokens int) int { return (tokens + e.cfg.BlockSize - 1) / e.cfg.BlockSize }

func (e *Engine) scaled(d time.Duration) time.Duration {
	if e.slowdown == 1 {
		return d
	}
	return time.Duration(float64(d) * e.slowdown)
}

// activationFits checks that a step batching tokens finds its transient
// activation memory free on the device at t, and kills the engine when not.
// The free figure is re-read when older than freeRefresh, and always right
// before a death is declared.
func (e *Engine) activationFits(t time.Duration, tokens int) bool {
	need := int64(tokens) * e.cfg.ActivationBytesPerToken
	if need == 0 {
		return true
	}
	if t-e.freeReadAt >= freeRefresh {
		e.readFree(t)
	}
	if need <= e.freeCached {
		return true
	}
	if e.freeReadAt != t || e.freeReads == 0 {
		if err := e.readFree(t); err != nil {
			return true // the device cannot be read: do not invent a death
		}
		if need <= e.freeCached {
			return true
		}
	}
	e.die(&OOMError{Need: need, Free: e.freeCached, Total: e.mem.Total(), Tokens: tokens})
	return false
}

// readFree refreshes the cached free-memory figure; on error the old one stays.
func (e *Engine) readFree(t time.Duration) error {
	free, err := e.mem.Free()
	e.freeReads++
	e.freeReadAt = t
	if err != nil {
		return err
	}
	e.freeCached = free
	return nil
}

// die ends the engine: every sequence ends with FinishError.
func (e *Engine) die(cause error) {
	e.dead = cause
	err := fmt.Errorf("%w: %w", ErrEngineDead, cause)
	end := func(s *Stream) {
		s.state = stateDone
		s.err = err
		e.publish(s, FinishError)
	}
	for _, s := range e.running {
		end(s)
	}
	for _, s := range e.waiting {
		end(s)
	}
	e.running, e.waiting, e.due, e.stepSeqs = nil, nil, nil, nil
	e.stepActive = false
	e.freeBlocks = e.totalBlocks
}

// sync brings the gauges and the generation counter up to date.
func (e *Engine) sync() {
	e.m.running.Set(float64(len(e.running)))
	e.m.waiting.Set(float64(len(e.waiting)))
	if e.totalBlocks > 0 {
		e.m.kvUsage.Set(float64(e.totalBlocks-e.freeBlocks) / float64(e.totalBlocks))
	}
	if e.genPending > 0 {
		e.m.genTokens.Add(float64(e.genPending))
		e.genPending = 0
	}
}

// seqHeap orders running sequences by next token time, then by id, so that
// simultaneous tokens come out in a deterministic order.
type seqHeap []*Stream

func (h seqHeap) Len() int { return len(h) }
func (h seqHeap) Less(i, j int) bool {
	if h[i].nextAt != h[j].nextAt {
		return h[i].nextAt < h[j].nextAt
	}
	return h[i].id < h[j].id
}
func (h seqHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *seqHeap) Push(x any) {
	s := x.(*Stream)
	s.heapIdx = len(*h)
	*h = append(*h, s)
}
func (h *seqHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	s.heapIdx = -1
	*h = old[:len(old)-1]
	return s
}
