package js

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// The metrics every script run records besides the LLM ones, as k6 names
// them (iterations_failed and iterations_interrupted are ours: k6 only
// logs a failed iteration and shows the interrupted ones in its progress
// line). iterations counts the iterations that ran to their end, passed
// or failed.
const (
	MetricChecks                = "checks"
	MetricIterations            = "iterations"
	MetricIterationDuration     = "iteration_duration"
	MetricIterationsFailed      = "iterations_failed"
	MetricIterationsInterrupted = "iterations_interrupted"
	MetricDroppedIterations     = "dropped_iterations"
	MetricVUs                   = "vus"
	MetricVUsMax                = "vus_max"
)

// runMetrics is the table of the metrics a script run registers before the
// script's own.
var runMetrics = []struct {
	name string
	kind metrics.Kind
	unit string
}{
	{MetricChecks, metrics.Rate, metrics.UnitRatio},
	{MetricIterations, metrics.Counter, ""},
	{MetricIterationDuration, metrics.Trend, metrics.UnitMillis},
	{MetricIterationsFailed, metrics.Counter, ""},
	{MetricIterationsInterrupted, metrics.Counter, ""},
	{MetricDroppedIterations, metrics.Counter, ""},
	{MetricVUs, metrics.Gauge, ""},
	{MetricVUsMax, metrics.Gauge, ""},
}

// SharedOptions configure NewShared.
type SharedOptions struct {
	// Env is the script's __ENV (the caller merges the process environment
	// and -e flags as it wants).
	Env map[string]string
	// Console receives console.* output. Default os.Stderr.
	Console io.Writer
	// Seed makes the clients' request ids repeatable.
	Seed uint64
	// SaveRequests, when set, receives one JSON line per LLM request.
	SaveRequests *recording.RequestWriter
}

// Shared is what every VU of one run shares: the run's clock, metric table,
// recorder and LLM clients. Safe for concurrent use.
type Shared struct {
	Env      map[string]string
	Clock    *recording.RunClock
	Metrics  *metrics.Registry
	Recorder *recording.Recorder
	// Exec is the run's execution state (k6/execution's instance and
	// test), kept by the runner and the VUs.
	Exec Execution

	console io.Writer
	conMu   sync.Mutex
	seed    uint64
	seq     atomic.Uint64

	mu      sync.Mutex
	clients map[clientKey]*client.Client
}

// clientKey is what makes two llm.Client objects need different HTTP
// clients; the others share one connection pool.
type clientKey struct {
	apiKeyEnv string
	timeout   time.Duration
}

// NewShared makes the shared state of a run, with the run metrics
// registered and the clock started.
func NewShared(opts SharedOptions) (*Shared, error) {
	reg := metrics.NewRegistry()
	for _, m := range runMetrics {
		if _, err := reg.Register(m.name, m.kind, m.unit); err != nil {
			return nil, fmt.Errorf("register %s: %w", m.name, err)
		}
	}
	if opts.Console == nil {
		opts.Console = os.Stderr
	}
	if opts.Env == nil {
		opts.Env = map[string]string{}
	}
	return &Shared{
		Env: opts.Env, Clock: recording.NewRunClock(), Metrics: reg,
		Recorder: recording.NewRecorder(recording.Options{Metrics: reg, SaveRequests: opts.SaveRequests}),
		console:  opts.Console, seed: opts.Seed, clients: map[clientKey]*client.Client{},
	}, nil
}

// RestartClock starts the run's clock again, so that the run's time
// excludes the VUs' init. Call it before any request is sent and before
// any VU runs.
func (s *Shared) RestartClock() { s.Clock = recording.NewRunClock() }

// Close releases the LLM clients' connections.
func (s *Shared) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		c.Close()
	}
	clear(s.clients)
}

// client returns the HTTP client for k, made on first use.
func (s *Shared) client(k clientKey) (*client.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[k]; ok {
		return c, nil
	}
	c, err := client.New(client.Options{
		Clock: s.Clock, Concurrency: 1024, Seed: s.seed, APIKeyEnv: k.apiKeyEnv, RequestTimeout: k.timeout,
		Getenv: func(name string) string {
			if v, ok := s.Env[name]; ok {
				return v
			}
			return os.Getenv(name)
		},
	})
	if err != nil {
		return nil, err
	}
	s.clients[k] = c
	return c, nil
}

// logf writes one console line.
func (s *Shared) logf(format string, args ...any) {
	s.conMu.Lock()
	defer s.conMu.Unlock()
	fmt.Fprintf(s.console, format+"\n", args...)
}

// AddSample records a sample of a registered metric (see
// recording.Recorder.AddSample).
func (s *Shared) AddSample(name string, tags recording.Tags, v float64) error {
	return s.Recorder.AddSample(name, tags, v)
}
