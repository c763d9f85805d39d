package js

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
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
	MetricGroupDuration         = "group_duration"
	MetricIterationsFailed      = "iterations_failed"
	MetricIterationsInterrupted = "iterations_interrupted"
	MetricDroppedIterations     = "dropped_iterations"
	MetricVUs                   = "vus"
	MetricVUsMax                = "vus_max"
)

// The metrics of HTTP requests made by k6/http and the SSE modules, as k6
// names them (trends in milliseconds).
const (
	MetricHTTPReqs              = "http_reqs"
	MetricHTTPReqFailed         = "http_req_failed"
	MetricHTTPReqDuration       = "http_req_duration"
	MetricHTTPReqBlocked        = "http_req_blocked"
	MetricHTTPReqConnecting     = "http_req_connecting"
	MetricHTTPReqTLSHandshaking = "http_req_tls_handshaking"
	MetricHTTPReqSending        = "http_req_sending"
	MetricHTTPReqWaiting        = "http_req_waiting"
	MetricHTTPReqReceiving      = "http_req_receiving"
	MetricSSEEvent              = "sse_event" // events received by the SSE modules, as xk6-sse counts them
)

// runMetric is one row of a table of metrics a run registers itself.
type runMetric struct {
	name string
	kind metrics.Kind
	unit string
}

// runMetrics is the table of the metrics a script run registers before the
// script's own.
var runMetrics = []runMetric{
	{MetricChecks, metrics.Rate, metrics.UnitRatio},
	{MetricIterations, metrics.Counter, ""},
	{MetricIterationDuration, metrics.Trend, metrics.UnitMillis},
	{MetricIterationsFailed, metrics.Counter, ""},
	{MetricIterationsInterrupted, metrics.Counter, ""},
	{MetricDroppedIterations, metrics.Counter, ""},
	{MetricVUs, metrics.Gauge, ""},
	{MetricVUsMax, metrics.Gauge, ""},
}

// k6Metrics is the table of the metrics the k6 module records, registered
// when a script imports it: group() records group_duration.
var k6Metrics = []runMetric{
	{MetricGroupDuration, metrics.Trend, metrics.UnitMillis},
}

// httpMetrics is the table of the metrics k6/http and the SSE modules
// record. They are registered when a script imports one of those modules,
// not before: every registered metric shows in the reports, and a script
// that makes no HTTP request should not show nine empty rows (k6's summary
// also shows only the metrics that got samples).
var httpMetrics = []runMetric{
	{MetricHTTPReqs, metrics.Counter, ""},
	{MetricHTTPReqFailed, metrics.Rate, metrics.UnitRatio},
	{MetricHTTPReqDuration, metrics.Trend, metrics.UnitMillis},
	{MetricHTTPReqBlocked, metrics.Trend, metrics.UnitMillis},
	{MetricHTTPReqConnecting, metrics.Trend, metrics.UnitMillis},
	{MetricHTTPReqTLSHandshaking, metrics.Trend, metrics.UnitMillis},
	{MetricHTTPReqSending, metrics.Trend, metrics.UnitMillis},
	{MetricHTTPReqWaiting, metrics.Trend, metrics.UnitMillis},
	{MetricHTTPReqReceiving, metrics.Trend, metrics.UnitMillis},
	{MetricDataSent, metrics.Counter, metrics.UnitBytes},
	{MetricDataReceived, metrics.Counter, metrics.UnitBytes},
}

// sseMetrics is the table of the metrics only the SSE modules record,
// registered (after httpMetrics) when a script imports one of them.
var sseMetrics = []runMetric{
	{MetricSSEEvent, metrics.Counter, ""},
}

// SharedOptions configure NewShared.
type SharedOptions struct {
	// Env is the script's __ENV (the caller merges the process environment
	// and -e flags as it wants).
	Env map[string]string
	// Console receives console.* output, one line each in k6's log
	// format (logFormat) with k6's source=console field. Default Log.
	Console io.Writer
	// ConsoleFile says Console is k6's --console-output file, whose
	// lines have no source field, as k6's have none.
	ConsoleFile bool
	// Log receives the run's own log lines, as k6 logs them:
	// --http-debug's dumps, exec.test.fail's reason, an invalid metric
	// value. Default Console, else os.Stderr.
	Log io.Writer
	// LogColor writes Console's and Log's lines in k6's terminal form,
	// which k6 uses whenever its stderr is a terminal and --no-color is
	// not given (its --console-output file included).
	LogColor bool
	// LogFormat is k6's --log-format of Log's lines, and of Console's
	// unless ConsoleFile (which keeps k6's text form): "" or LogText,
	// LogJSON, LogRaw. LogLevel, when set, drops the lines less severe
	// (k6's --log-output=file=F,level=NAME).
	LogFormat, LogLevel string
	// ConsoleDebug shows console.debug lines, which k6 shows only with
	// --verbose.
	ConsoleDebug bool
	// Seed makes the clients' request ids repeatable.
	Seed uint64
	// SaveRequests, when set, receives one JSON line per LLM request.
	SaveRequests *recording.RequestWriter
	// SLO are the per-request SLOs of the goodput metric (none: goodput
	// counts every ok request).
	SLO recording.SLO
	// NoConnectionReuse (k6's noConnectionReuse) sends every k6/http,
	// SSE and k6/x/llm request on a new connection. NoVUConnectionReuse (k6's
	// noVUConnectionReuse) gives each VU its own connections, closed at
	// the end of each of its iterations, as k6's VUs do.
	NoConnectionReuse, NoVUConnectionReuse bool
	// HTTPDebug is k6's --http-debug: "" off, "headers" logs each k6/http
	// and SSE request and response head on the console, "full" their
	// bodies too.
	HTTPDebug string
	// MaxOpenBytes bounds what one open() may read (0: DefaultMaxOpenBytes),
	// so that a script cannot take the process's memory with a huge file.
	MaxOpenBytes int64
}

// DefaultMaxOpenBytes is open()'s bound when SharedOptions gives none:
// 256 MiB, far above a prompt dataset, far below the machine's memory.
const DefaultMaxOpenBytes int64 = 256 << 20

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

	console     io.Writer
	consoleFile bool // console is --console-output's file (SharedOptions.ConsoleFile)
	log         io.Writer
	logFmt      logFormat
	conFmt      logFormat // console's: logFmt, or text for ConsoleFile
	// consoleDebug: console.debug lines are shown (k6's --verbose).
	consoleDebug bool
	conMu        sync.Mutex // one line at a time on console and log
	seed         uint64
	maxOpen      int64
	seq          atomic.Uint64

	mu      sync.Mutex
	clients map[clientKey]*client.Client

	http  *httpClient // k6/http's and the SSE modules' one connection pool
	httpO httpOptions // how it was made; a VU's own pool (NoVUConnectionReuse) is made alike
	perVU bool        // NoVUConnectionReuse
	// minIter is k6's minIterationDuration (0: none): an iteration that
	// ended sooner is followed by a wait for the rest.
	minIter time.Duration
	arrays  map[string]*sharedArray // k6/data's SharedArrays, by name

	checks checkTally
	made   []ClientInfo // VU 0's llm.Client objects (see Clients)

	hooks Hooks // set before the load (SetHooks), read-only during it
}

// clientKey is what makes two llm.Client objects need different HTTP
// clients; the others share one connection pool.
type clientKey struct {
	apiKeyEnv string
	apiKey    string // a literal key (llm.Client's apiKey), over apiKeyEnv
	timeout   time.Duration
}

// NewShared makes the shared state of a run, with the run metrics
// registered and the clock started.
func NewShared(opts SharedOptions) (*Shared, error) {
	reg := metrics.NewRegistry()
	if err := registerMetrics(reg, runMetrics); err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = opts.Console
	}
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.Console == nil {
		opts.Console, opts.ConsoleFile = opts.Log, false
	}
	if opts.Env == nil {
		opts.Env = map[string]string{}
	}
	sh := &Shared{
		Env: opts.Env, Clock: recording.NewRunClock(), Metrics: reg,
		Recorder: recording.NewRecorder(recording.Options{Metrics: reg, SaveRequests: opts.SaveRequests, SLO: opts.SLO}),
		console:  opts.Console, consoleFile: opts.ConsoleFile, log: opts.Log,
		logFmt:       logFormat{color: opts.LogColor, start: time.Now(), kind: opts.LogFormat, maxLevel: opts.LogLevel},
		consoleDebug: opts.ConsoleDebug, seed: opts.Seed, clients: map[clientKey]*client.Client{},
		arrays: map[string]*sharedArray{}, perVU: opts.NoVUConnectionReuse,
		maxOpen: opts.MaxOpenBytes,
	}
	if sh.maxOpen <= 0 {
		sh.maxOpen = DefaultMaxOpenBytes
	}
	sh.conFmt = sh.logFmt
	if sh.consoleFile { // --console-output's file keeps k6's text form, all levels
		sh.conFmt.kind, sh.conFmt.maxLevel = "", ""
	}
	switch opts.HTTPDebug {
	case "":
	case "headers", "full":
		sh.setHTTPDebug(opts.HTTPDebug)
	default:
		return nil, fmt.Errorf("http debug %q: want headers or full", opts.HTTPDebug)
	}
	sh.httpO.noReuse = opts.NoConnectionReuse
	sh.httpO.maxRedirects = httpDefaultRedirects
	sh.httpO.userAgent, sh.httpO.responseType = httpUserAgent, "text"
	sh.httpO.batch, sh.httpO.batchPerHost = httpBatchParallel, httpBatchPerHost
	sh.http = newHTTPClient(sh.httpO)
	return sh, nil
}

// setHTTPDebug logs each request and response as k6's --http-debug
// does: their heads for "headers", with their bodies for "full".
func (s *Shared) setHTTPDebug(mode string) {
	s.httpO.debug = func(msg string, fields []logField) { s.logLine("info", msg, fields...) }
	s.httpO.debugBody = mode == "full"
}

// HTTPOptions are the script options (k6's) that shape k6/http's and the
// SSE modules' client.
type HTTPOptions struct {
	InsecureSkipTLSVerify bool
	MaxRedirects          *int // nil: k6's default, 10
	// TLSMin and TLSMax are k6's tlsVersion ("tls1.2"; "" leaves Go's
	// default); TLSCipherSuites is k6's tlsCipherSuites, by Go's names
	// (the suites of TLS 1.0 to 1.2).
	TLSMin, TLSMax  string
	TLSCipherSuites []string
	// UserAgent is k6's userAgent: nil keeps llmchaos's ("llmchaos"), ""
	// sends no User-Agent header.
	UserAgent *string
	// DiscardResponseBodies is k6's discardResponseBodies: a response's
	// body is read and dropped (body null) unless its request's
	// params.responseType asks for it.
	DiscardResponseBodies bool
	// Hosts is k6's hosts: a name, host:port or *-pattern → an IP or
	// IP:port its connections go to instead of DNS's answer.
	Hosts map[string]string
	// NoConnectionReuse and NoVUConnectionReuse are k6's options of those
	// names; either set here or in SharedOptions applies.
	NoConnectionReuse, NoVUConnectionReuse bool
	// TLSAuth are k6's tlsAuth client certificates.
	TLSAuth []TLSAuth
	// Throw is k6's throw: a request that gets no response (a transport
	// error, an invalid URL) throws instead of returning a response with
	// error set, unless its params.throw says otherwise.
	Throw bool
	// BlockHostnames and BlacklistIPs are k6's blockHostnames (names,
	// or *.suffix patterns, no request may go to) and blacklistIPs (CIDR
	// ranges no connection may reach).
	BlockHostnames, BlacklistIPs []string
	// NoCookiesReset is k6's noCookiesReset: a VU's cookie jar keeps its
	// cookies from one iteration to the next.
	NoCookiesReset bool
	// HTTPDebug is k6's httpDebug option ("", "headers" or "full"); the
	// --http-debug flag (SharedOptions.HTTPDebug) wins over it.
	HTTPDebug string
	// Batch and BatchPerHost are k6's batch and batchPerHost: the
	// requests of one http.batch in flight at once, in all (nil: 20) and
	// to one host (nil: 6; 0: no limit).
	Batch, BatchPerHost *int
}

// HTTPOptionError is a script option SetHTTPOptions refuses: Option is
// its k6 name (tlsVersion.min), Msg what follows the name in a message.
type HTTPOptionError struct{ Option, Msg string }

func (e *HTTPOptionError) Error() string { return e.Option + e.Msg }

// SetHTTPOptions remakes the HTTP client with the script's options. Call
// it once VU 0's init code gave them, before any request and before any
// other VU is made (each VU's own pool is made like the shared one).
func (s *Shared) SetHTTPOptions(o HTTPOptions) error {
	var errs []error
	if o.MaxRedirects != nil && *o.MaxRedirects < 0 {
		errs = append(errs, &HTTPOptionError{Option: "maxRedirects", Msg: fmt.Sprintf(" %d: want 0 or more", *o.MaxRedirects)})
	}
	lo, err := tlsVersionID("tlsVersion.min", o.TLSMin)
	if err != nil {
		errs = append(errs, err)
	}
	hi, err := tlsVersionID("tlsVersion.max", o.TLSMax)
	if err != nil {
		errs = append(errs, err)
	}
	if o.Batch != nil && *o.Batch < 1 {
		errs = append(errs, &HTTPOptionError{Option: "batch", Msg: fmt.Sprintf(" %d: want 1 or more", *o.Batch)})
	}
	if o.BatchPerHost != nil && *o.BatchPerHost < 0 {
		errs = append(errs, &HTTPOptionError{Option: "batchPerHost", Msg: fmt.Sprintf(" %d: want 0 (no limit) or more", *o.BatchPerHost)})
	}
	switch o.HTTPDebug {
	case "", "headers", "full":
	default:
		errs = append(errs, &HTTPOptionError{Option: "httpDebug", Msg: fmt.Sprintf(" %q: want headers or full", o.HTTPDebug)})
	}
	hosts, herrs := newHostsMap(o.Hosts)
	errs = append(errs, herrs...)
	guard, gerrs := newDialGuard(o.BlockHostnames, o.BlacklistIPs)
	errs = append(errs, gerrs...)
	certs, cerrs := tlsAuthCertificates(o.TLSAuth)
	errs = append(errs, cerrs...)
	var suites []uint16
	for _, name := range o.TLSCipherSuites {
		id, ok := cipherSuiteID(name)
		if !ok {
			errs = append(errs, &HTTPOptionError{Option: "tlsCipherSuites",
				Msg: fmt.Sprintf(": unknown cipher suite %q (Go's names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", name)})
			continue
		}
		suites = append(suites, id)
	}
	if len(errs) > 0 {
		return errors.Join(errs...) // each an *HTTPOptionError, all at once
	}
	s.http.close()
	s.httpO.tlsMin, s.httpO.tlsMax, s.httpO.suites = lo, hi, suites
	s.httpO.insecure = o.InsecureSkipTLSVerify
	if o.MaxRedirects != nil {
		s.httpO.maxRedirects = *o.MaxRedirects
	}
	if o.UserAgent != nil {
		s.httpO.userAgent = *o.UserAgent
	}
	if o.DiscardResponseBodies {
		s.httpO.responseType = "none"
	}
	s.httpO.hosts, s.httpO.guard, s.httpO.certs, s.httpO.throw, s.httpO.keepCookies = hosts, guard, certs, o.Throw, o.NoCookiesReset
	if s.httpO.debug == nil && o.HTTPDebug != "" {
		s.setHTTPDebug(o.HTTPDebug)
	}
	s.httpO.noReuse = s.httpO.noReuse || o.NoConnectionReuse
	s.perVU = s.perVU || o.NoVUConnectionReuse
	if o.Batch != nil {
		s.httpO.batch = *o.Batch
	}
	if o.BatchPerHost != nil {
		s.httpO.batchPerHost = *o.BatchPerHost
	}
	s.http = newHTTPClient(s.httpO)
	return nil
}

// SetMinIterationDuration sets k6's minIterationDuration: a VU waits
// after an iteration that took less, until d has passed since it started
// (or its context ends). Call it before any VU runs.
func (s *Shared) SetMinIterationDuration(d time.Duration) { s.minIter = d }

// RestartClock starts the run's clock again, so that the run's time
// excludes the VUs' init. Call it before any request is sent and before
// any VU runs.
func (s *Shared) RestartClock() { s.Clock = recording.NewRunClock() }

// Close releases the LLM clients' and the HTTP client's connections.
func (s *Shared) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		c.Close()
	}
	clear(s.clients)
	s.http.close()
}

// registerMetrics registers the rows of table in reg; registering a row
// again is a no-op.
func registerMetrics(reg *metrics.Registry, table []runMetric) error {
	for _, m := range table {
		if _, err := reg.Register(m.name, m.kind, m.unit); err != nil {
			return fmt.Errorf("register %s: %w", m.name, err)
		}
	}
	return nil
}

// client returns the HTTP client for k, made on first use.
func (s *Shared) client(k clientKey) (*client.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[k]; ok {
		return c, nil
	}
	opts := client.Options{
		Clock: s.Clock, Concurrency: 1024, Seed: s.seed, APIKeyEnv: k.apiKeyEnv, APIKey: k.apiKey, RequestTimeout: k.timeout,
		Getenv: func(name string) string {
			if v, ok := s.Env[name]; ok {
				return v
			}
			return os.Getenv(name)
		},
	}
	s.clientNet().Apply(&opts) // the script's hosts, blockHostnames, blacklistIPs and TLS options, as k6/http's
	c, err := client.New(opts)
	if err != nil {
		return nil, err
	}
	s.clients[k] = c
	return c, nil
}

// consoleLine writes one line of a script's console.<level>(...) as k6
// does: on the terminal with source=console, in --console-output's file
// without.
func (s *Shared) consoleLine(level, msg string) {
	var fields []logField
	if !s.consoleFile {
		fields = []logField{{"source", "console"}}
	}
	line := s.conFmt.line(time.Now(), level, msg, fields...)
	if line == "" {
		return
	}
	s.conMu.Lock()
	defer s.conMu.Unlock()
	_, _ = io.WriteString(s.console, line)
}

// logLine writes one of the run's own log lines (SharedOptions.Log), its
// fields in key order, as k6's logger sorts them.
func (s *Shared) logLine(level, msg string, fields ...logField) {
	slices.SortFunc(fields, func(a, b logField) int { return strings.Compare(a.key, b.key) })
	line := s.logFmt.line(time.Now(), level, msg, fields...)
	if line == "" {
		return
	}
	s.conMu.Lock()
	defer s.conMu.Unlock()
	_, _ = io.WriteString(s.log, line)
}

// Log writes one line of the run's (level "error", "warning", "info",
// "debug"), with fields as NAME, VALUE pairs, in k6's log form on
// SharedOptions.Log: the runner's warnings and iteration exceptions (with
// k6's source=stacktrace).
func (s *Shared) Log(level, msg string, fields ...string) {
	var fs []logField
	for i := 0; i+1 < len(fields); i += 2 {
		fs = append(fs, logField{fields[i], fields[i+1]})
	}
	if level == "warning" {
		level = "warn" // logLevels is by console method
	}
	s.logLine(level, msg, fs...)
}

// AddSample records a sample of a registered metric (see
// recording.Recorder.AddSample), tagged by Hooks.Tag and handed to
// Hooks.Sample.
func (s *Shared) AddSample(name string, tags recording.Tags, v float64) error {
	if s.hooks.Tag != nil {
		// A copy whose address escapes only on this path: a run without
		// a Tag hook records a sample without allocating.
		t := tags
		s.hooks.Tag(s.Clock.Now(), &t)
		tags = t
	}
	if err := s.Recorder.AddSample(name, tags, v); err != nil {
		return err
	}
	if s.hooks.Sample != nil {
		s.hooks.Sample(name, tags, v)
	}
	return nil
}

// tlsVersionID is the Go constant of k6's TLS version name ("" is 0: Go's
// default).
func tlsVersionID(field, name string) (uint16, error) {
	if name == "" {
		return 0, nil
	}
	for id, n := range tlsVersions {
		if n == name {
			return id, nil
		}
	}
	return 0, &HTTPOptionError{Option: field, Msg: fmt.Sprintf(" %q: want tls1.0, tls1.1, tls1.2 or tls1.3", name)}
}

// cipherSuiteID is the ID of the cipher suite Go names name, insecure ones
// included (k6 lets a script ask for them).
func cipherSuiteID(name string) (uint16, bool) {
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if cs.Name == name {
			return cs.ID, true
		}
	}
	return 0, false
}
