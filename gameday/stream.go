package gameday

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/scrape"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Stream timing.
const (
	// tickLag is how long after a second of run clock ends its frame is
	// made: results are counted in the second they end in, and reach the
	// recorder a moment after.
	tickLag = 150 * time.Millisecond
	// clientBuffer is how many messages a slow client may lag behind
	// before it is dropped (its page reconnects and gets the history).
	clientBuffer = 16
	// keepAlive is how often an idle stream gets a comment, so that
	// proxies and browsers keep it open.
	keepAlive = 15 * time.Second
)

// Pcts are a latency's p50 and p99 over one second, in milliseconds (nil:
// no value that second).
type Pcts struct {
	P50 *float64 `json:"p50,omitempty"`
	P99 *float64 `json:"p99,omitempty"`
}

// Frame is one second of the load as the console draws it: the second
// [T, T+1) of the run clock, with the requests that ended in it.
type Frame struct {
	T    int  `json:"t"`
	TTFT Pcts `json:"ttft"`
	ITL  Pcts `json:"itl"`
	E2E  Pcts `json:"e2e"`
	// OK, Failed, Cancelled and Dropped count the requests by outcome.
	OK        int64 `json:"ok"`
	Failed    int64 `json:"failed"`
	Cancelled int64 `json:"cancelled"`
	Dropped   int64 `json:"dropped"`
	// Errors counts the failed requests by error class.
	Errors map[string]int64 `json:"errors,omitempty"`
	// InFlight is the mean number of requests in flight, InFlightMax
	// the most.
	InFlight    float64 `json:"in_flight"`
	InFlightMax int64   `json:"in_flight_max"`
	// Tokens is the output tokens of the ok requests.
	Tokens int64 `json:"tokens"`
	// Probes counts the consistency probes sent in the second that were
	// compared with their prompt's reference by the time the frame was
	// made, and those that gave it; absent without probes or when none
	// was compared.
	Probes *ProbeFrame `json:"probes,omitempty"`
}

// ProbeFrame is one second of the consistency probes.
type ProbeFrame struct {
	Compared   int `json:"compared"`
	Consistent int `json:"consistent"`
}

// ConsistencyState is what the console shows of the consistency probes
// besides their chart: the consistency of each phase so far and, per
// prompt that got an answer other than its reference, the most common
// one set against it.
type ConsistencyState struct {
	Unit      string                     `json:"unit"`
	Windows   []report.ConsistencyWindow `json:"windows"`
	Divergent []DivergentPrompt          `json:"divergent,omitempty"`
}

// DivergentPrompt is a prompt's most common divergent answer against its
// reference, around the first difference (report.AnswerDiff).
type DivergentPrompt struct {
	Prompt string                  `json:"prompt"`
	Diff   report.AnswerDiff       `json:"diff"`
	Answer *report.DivergentAnswer `json:"answer"`
}

// divergenceContext is how many characters of each answer the console
// shows on each side of a divergence.
const divergenceContext = 40

// consistencyState returns the console's view of c (nil: no probes).
func consistencyState(c *report.Consistency) *ConsistencyState {
	if c == nil {
		return nil
	}
	st := &ConsistencyState{Unit: c.Unit, Windows: c.Windows}
	for _, p := range c.Prompts {
		if d, ok := p.Diff(divergenceContext); ok {
			a := *p.Divergent
			a.Text = "" // the diff holds what the console shows
			st.Divergent = append(st.Divergent, DivergentPrompt{Prompt: p.Prompt, Diff: d, Answer: &a})
		}
	}
	return st
}

// probeFrame returns second t of c's series (nil: none compared).
func probeFrame(c *report.Consistency, t int) *ProbeFrame {
	if c == nil {
		return nil
	}
	for _, pt := range c.Series {
		if pt.T == t && pt.Compared > 0 {
			return &ProbeFrame{Compared: pt.Compared, Consistent: pt.Consistent}
		}
	}
	return nil
}

// frameOf computes second t of rec.
func frameOf(rec *recording.Recorder, t int) Frame {
	from := time.Duration(t) * time.Second
	w := rec.Window(from, from+time.Second)
	c := &w.Counts
	f := Frame{T: t, OK: c.OK, Failed: c.Failed, Cancelled: c.Cancelled, Dropped: c.Dropped,
		InFlight: w.InFlightMean, InFlightMax: w.InFlightMax, Tokens: c.OutputTokens}
	pct := func(m recording.Metric) Pcts {
		var p Pcts
		if d, ok := w.Percentile(m, 50); ok {
			v := float64(d) / float64(time.Millisecond)
			p.P50 = &v
		}
		if d, ok := w.Percentile(m, 99); ok {
			v := float64(d) / float64(time.Millisecond)
			p.P99 = &v
		}
		return p
	}
	f.TTFT, f.ITL, f.E2E = pct(recording.MetricTTFT), pct(recording.MetricITL), pct(recording.MetricE2E)
	for class, n := range c.ErrorsByClass() {
		if n > 0 && class != string(recording.ClassCancelled) {
			if f.Errors == nil {
				f.Errors = map[string]int64{}
			}
			f.Errors[class] = n
		}
	}
	return f
}

// sampleLookBack is how far before the last server sample sent the next
// tick looks for samples stored late.
const sampleLookBack = 5 * time.Second

// sampleKey names one server sample.
type sampleKey struct {
	at             time.Duration
	endpoint, name string
}

// ServerPoint is one sample of a server series the monitor scraped, or of
// a GPU's memory (gpu_memory_used_bytes, gpu_memory_balloon_bytes, … of
// endpoint vgpu-N for the simulator's virtual GPUs).
type ServerPoint struct {
	AtS      float64 `json:"at_s"`
	Endpoint string  `json:"endpoint"`
	Name     string  `json:"name"`
	Value    float64 `json:"value"`
}

// state is what the console shows besides the charts, sent with every
// message.
type state struct {
	Status      experiments.LiveStatus    `json:"status"`
	Load        experiments.LoadState     `json:"load"`
	Active      []experiments.ActiveFault `json:"active"`
	Timeline    experiments.Timeline      `json:"timeline"`
	Consistency *ConsistencyState         `json:"consistency,omitempty"`
}

// hello is the first message of a stream: the history so far.
type hello struct {
	state
	Frames []Frame              `json:"frames"`
	Server []ServerPoint        `json:"server"`
	Events []report.EventRecord `json:"events"`
	Ended  *Ended               `json:"ended,omitempty"`
}

// tick is the message of every second.
type tick struct {
	state
	Frame  *Frame               `json:"frame,omitempty"`
	Server []ServerPoint        `json:"server,omitempty"`
	Events []report.EventRecord `json:"events,omitempty"`
}

// Ended is the last message: how the game day ended and where its record
// is.
type Ended struct {
	Verdict string   `json:"verdict,omitempty"`
	Detail  string   `json:"detail,omitempty"`
	RunDir  string   `json:"run_dir,omitempty"`
	Files   []string `json:"files,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// hub makes the stream's messages once per second and fans them out to
// the connected consoles. The history it keeps lets a console opened (or
// reloaded) mid-game draw everything since the start.
type hub struct {
	live *experiments.Control

	mu      sync.Mutex
	frames  []Frame
	server  []ServerPoint
	events  []report.EventRecord
	nextEv  int
	lastAt  time.Duration          // the last server sample's time
	lastGPU time.Duration          // the last GPU sample's time
	sent    map[sampleKey]struct{} // the server samples of the last moments sent
	clients map[chan []byte]struct{}
	ended   *Ended

	// cpu is the CPU time the stream has spent making and sending its
	// messages (Linux: the threads' own clocks), for the benchmark.
	cpu atomic.Int64
}

func newHub(live *experiments.Control) *hub {
	return &hub{live: live, clients: map[chan []byte]struct{}{}, sent: map[sampleKey]struct{}{}}
}

// currentState reads the live run's state.
func (h *hub) currentState() state {
	return h.stateWith(h.live.Consistency())
}

// stateWith is currentState with the consistency record c.
func (h *hub) stateWith(c *report.Consistency) state {
	return state{Status: h.live.Status(), Load: h.live.Load(), Active: h.live.Active(), Timeline: h.live.Timeline(),
		Consistency: consistencyState(c)}
}

// run makes a message every second of run clock once the load started,
// until ctx ends or the run is done. It runs on a thread of its own, so
// that its CPU time can be measured.
func (h *hub) run(ctx context.Context) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	select {
	case <-h.live.Ready():
	case <-h.live.Done():
		return
	case <-ctx.Done():
		return
	}
	rec := h.live.Recorder()
	next := 1 // the next second to make a frame of
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		now := h.live.Now()
		wait := time.Duration(next)*time.Second + tickLag - now
		t.Reset(max(wait, 0))
		select {
		case <-ctx.Done():
			return
		case <-h.live.Done():
			return
		case <-t.C:
		}
		start := threadCPU()
		// Seconds missed (a stalled machine) are made now, in order.
		for now = h.live.Now(); time.Duration(next)*time.Second+tickLag <= now; next++ {
			h.tick(rec, next-1)
		}
		h.cpu.Add(int64(threadCPU() - start))
	}
}

// tick makes the message of second t, adds it to the history and sends
// it to every client: under one hold of h.mu, so that a console that
// subscribes gets each event once, in its hello or in a tick.
func (h *hub) tick(rec *recording.Recorder, t int) {
	f := frameOf(rec, t)
	c := h.live.Consistency()
	f.Probes = probeFrame(c, t)
	// The scrapes of several endpoints run at once, so a sample may be
	// stored after a later one: look back a little, skip those sent.
	samples := h.live.ServerSamples(max(h.lastAt-sampleLookBack, 0))
	st := h.stateWith(c)
	msg := tick{state: st, Frame: &f}
	for _, s := range samples {
		k := sampleKey{s.At, s.Endpoint, s.Name}
		if _, sent := h.sent[k]; sent {
			continue
		}
		h.sent[k] = struct{}{}
		msg.Server = append(msg.Server, ServerPoint{AtS: s.At.Seconds(), Endpoint: s.Endpoint, Name: s.Name, Value: s.Value})
		h.lastAt = max(h.lastAt, s.At)
	}
	for k := range h.sent {
		if k.at < h.lastAt-2*sampleLookBack {
			delete(h.sent, k)
		}
	}
	gpu := h.live.GPUSamples(h.lastGPU)
	slices.SortStableFunc(gpu, func(a, b scrape.Sample) int { return cmp.Compare(a.At, b.At) })
	for _, s := range gpu {
		msg.Server = append(msg.Server, ServerPoint{AtS: s.At.Seconds(), Endpoint: s.Endpoint, Name: s.Name, Value: s.Value})
		h.lastGPU = max(h.lastGPU, s.At)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	msg.Events, h.nextEv = h.live.Events(h.nextEv)
	h.frames = append(h.frames, f)
	h.server = append(h.server, msg.Server...)
	h.events = append(h.events, msg.Events...)
	h.broadcastLocked(sseMessage("tick", msg))
}

// broadcastLocked sends msg to every client; a client too slow to take
// it is dropped (its page reconnects). h.mu is held.
func (h *hub) broadcastLocked(msg []byte) {
	for c := range h.clients {
		select {
		case c <- msg:
		default:
			delete(h.clients, c)
			close(c)
		}
	}
}

// end sends the last message and closes every stream after it; a
// console that connects later gets it in its hello.
func (h *hub) end(e Ended) {
	msg := sseMessage("ended", e)
	st := h.currentState()
	h.mu.Lock()
	defer h.mu.Unlock()
	// What happened since the last tick (the end, the reverts) first.
	last := tick{state: st}
	last.Events, h.nextEv = h.live.Events(h.nextEv)
	h.events = append(h.events, last.Events...)
	h.broadcastLocked(sseMessage("tick", last))
	h.ended = &e
	for c := range h.clients {
		select {
		case c <- msg:
		default:
		}
		delete(h.clients, c)
		close(c)
	}
}

// subscribe returns the hello message and the channel of the messages
// that follow, in order; unsubscribe with leave.
func (h *hub) subscribe() ([]byte, chan []byte) {
	st := h.currentState()
	h.mu.Lock()
	defer h.mu.Unlock()
	msg := sseMessage("hello", hello{state: st, Frames: h.frames, Server: h.server, Events: h.events, Ended: h.ended})
	c := make(chan []byte, clientBuffer)
	if h.ended == nil {
		h.clients[c] = struct{}{}
	} else {
		close(c)
	}
	return msg, c
}

// leave unsubscribes c.
func (h *hub) leave(c chan []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.clients[c]; ok {
		delete(h.clients, c)
		close(c)
	}
}

// sseMessage encodes one Server-Sent Event.
func sseMessage(event string, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	out := make([]byte, 0, len(b)+len(event)+16)
	out = append(out, "event: "...)
	out = append(out, event...)
	out = append(out, "\ndata: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}

// serveStream serves GET /api/stream: the hello message, then every
// message of the hub until the client leaves or the game day ends. It
// runs on a thread of its own while it writes, so that the stream's CPU
// time can be measured.
func (h *hub) serveStream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "streaming unsupported by this connection", nil)
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	first, c := h.subscribe()
	defer h.leave(c)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	send := func(b []byte) bool {
		start := threadCPU()
		_, err := w.Write(b)
		if err == nil {
			fl.Flush()
		}
		h.cpu.Add(int64(threadCPU() - start))
		return err == nil
	}
	if !send(append([]byte("retry: 2000\n"), first...)) {
		return
	}
	ka := time.NewTicker(keepAlive)
	defer ka.Stop()
	for {
		select {
		case msg, ok := <-c:
			if !ok {
				return // the game day ended, or this client was too slow
			}
			if !send(msg) {
				return
			}
		case <-ka.C:
			if !send([]byte(": keep-alive\n\n")) {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}
