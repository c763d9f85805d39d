package js

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/netip"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Hooks connect a script run to what runs alongside it: an experiment's
// fault timeline, which tags every sample with its phase and fault, and the
// live outputs (Prometheus exporter, remote write, tracing). Every field
// is optional; each is called from the VUs' goroutines and must be safe
// for concurrent use.
type Hooks struct {
	// Tag, when set, fills the run-level tags of a result or a sample
	// recorded at run-clock time at (an LLM result is tagged at its send,
	// with its endpoint already set), before the recorder sees it: the
	// experiment runner's phase and fault, as the load engine's Tagger.
	Tag func(at time.Duration, tags *recording.Tags)
	// Observe, when set, sees every LLM result once it is recorded (live
	// series, spans); it must not keep the result.
	Observe func(res *recording.Result)
	// Sample, when set, sees every sample of a metric registered in the
	// run's table (checks, iterations, the script's custom metrics) once
	// it is recorded, with its tags.
	Sample func(name string, tags recording.Tags, v float64)
}

// SetHooks installs h. Call it before setup() and before any VU runs an
// iteration: the hooks are read without a lock afterwards.
func (s *Shared) SetHooks(h Hooks) { s.hooks = h }

// ClientInfo is one llm.Client the init code of VU 0 constructed: what a
// pre-flight check and a dry run need to know about where the script
// sends its requests.
type ClientInfo struct {
	BaseURL   string `json:"baseURL"`
	Model     string `json:"model,omitempty"`
	API       string `json:"api"` // "chat" or "completions"
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// APIKey is the literal key the script gave (apiKey), for the
	// pre-flight check's requests only: never encoded, printed or logged.
	APIKey string `json:"-"`
	// Net is how the run's llm.Client objects connect, from the script's
	// options; set by Clients (nil in the list VU 0 builds).
	Net *ClientNet `json:"-"`
}

// ClientNet is how the llm.Client objects of a run connect: the script's
// hosts, blockHostnames, blacklistIPs, tlsAuth, tlsVersion,
// tlsCipherSuites, insecureSkipTLSVerify and noConnectionReuse, as
// k6/http honours them, so that a pre-flight check goes where the load
// will.
type ClientNet struct {
	TLSConfig   *tls.Config
	Resolve     func(ctx context.Context, hostport string) (netip.AddrPort, error)
	NoKeepAlive bool
}

// Apply sets o's connection options to n's; a nil n leaves o as it is.
func (n *ClientNet) Apply(o *client.Options) {
	if n == nil {
		return
	}
	o.TLSConfig, o.Resolve, o.NoKeepAlive = n.TLSConfig, n.Resolve, n.NoKeepAlive
}

// String is c without its key, so that printing a ClientInfo never shows it.
func (c ClientInfo) String() string {
	key := ""
	if c.APIKey != "" {
		key = " apiKey=[redacted]"
	}
	return fmt.Sprintf("{baseURL=%s model=%s api=%s apiKeyEnv=%s%s}", c.BaseURL, c.Model, c.API, c.APIKeyEnv, key)
}

// Clients returns the distinct llm.Client objects VU 0's init code made,
// in the order it made them, each with the run's ClientNet as the
// script's options set it (SetHTTPOptions).
func (s *Shared) Clients() []ClientInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]ClientInfo(nil), s.made...)
	n := s.clientNet()
	for i := range out {
		out[i].Net = n
	}
	return out
}

// clientNet is the ClientNet of the script's options as they stand.
func (s *Shared) clientNet() *ClientNet {
	return &ClientNet{TLSConfig: s.httpO.tlsConfig(), Resolve: s.httpO.guard.resolver(s.httpO.hosts), NoKeepAlive: s.httpO.noReuse}
}

// noteClient records an llm.Client made by VU 0's init code, once.
func (s *Shared) noteClient(c ClientInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.made {
		if m == c {
			return
		}
	}
	s.made = append(s.made, c)
}

// record tags res (Hooks.Tag, at its send), records it and hands it to
// Hooks.Observe.
func (s *Shared) record(res *recording.Result) {
	if s.hooks.Tag != nil {
		s.hooks.Tag(res.Scheduled, &res.Tags)
	}
	s.Recorder.Record(res)
	if s.hooks.Observe != nil {
		s.hooks.Observe(res)
	}
}
