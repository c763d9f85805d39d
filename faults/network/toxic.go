package network

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// Fault type names of the proxy's toxics, as written in an experiment file's
// `type:` field. The network.* ones act on bytes (L4); http.* and stream.*
// need a proxy in ModeHTTP and are decided per request (L7).
const (
	TypeProxyLatency     = "network.latency"
	TypeProxyThrottle    = "network.throttle"
	TypeProxySlowClose   = "network.slow_close"
	TypeProxyResetPeer   = "network.reset_peer"
	TypeProxyBlackhole   = "network.blackhole"
	TypeProxyLimitData   = "network.limit_data"
	TypeHTTPError        = "http.error"
	TypeHTTPTTFB         = "http.ttfb"
	TypeStreamStall      = "stream.stall"
	TypeStreamCut        = "stream.cut"
	TypeStreamChunkDelay = "stream.chunk_delay"
)

// KindProxyToxic is the RevertSpec kind of a toxic added to a proxy. Its
// data names the proxy's control socket and the toxic; its Reverter,
// RevertToxic, removes the toxic if that proxy still runs.
const KindProxyToxic = "proxy-toxic"

// ProxyParams are the typed parameters of one toxic type: a pointer to one
// of LatencyParams, ThrottleParams, SlowCloseParams, ResetPeerParams,
// BlackholeParams, LimitDataParams, HTTPErrorParams, TTFBParams,
// StallParams, CutParams or ChunkDelayParams. The runner gets an empty one
// from NewProxyParams, decodes the experiment's `params:` into it (YAML or
// JSON; durations are strings such as "200ms") and passes it to NewToxic,
// which applies the defaults and validates.
type ProxyParams interface {
	// Type returns the fault type the parameters configure.
	Type() string
	// Validate reports every problem at once. Call it on parameters whose
	// defaults are applied (NewToxic does both).
	Validate() error
	// withDefaults returns a copy with the defaults filled in.
	withDefaults() ProxyParams
	// build returns the runtime toxic, drawing from a generator seeded with seed.
	build(seed uint64) runtimeToxic
}

// proxyParams maps each toxic type of Types() (those acting through the
// proxy) to its empty params; the list in types.go is the only one.
func proxyParams() map[string]func() ProxyParams {
	m := map[string]func() ProxyParams{}
	for _, t := range Types() {
		if t.Target != faults.TargetProxy {
			continue
		}
		newParams := t.NewParams
		m[t.Name] = func() ProxyParams { return newParams().(ProxyParams) }
	}
	return m
}

// ProxyFaultTypes returns the toxic fault types, sorted.
func ProxyFaultTypes() []string {
	m := proxyParams()
	ts := make([]string, 0, len(m))
	for t := range m {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// NewProxyParams returns empty parameters of fault type typ for decoding,
// or an error naming the known types.
func NewProxyParams(typ string) (ProxyParams, error) {
	mk, ok := proxyParams()[typ]
	if !ok {
		return nil, fmt.Errorf("unknown proxy fault type %q (known: %s)", typ, strings.Join(ProxyFaultTypes(), ", "))
	}
	return mk(), nil
}

// ProxyReverters returns the Reverter of each RevertSpec kind the proxy's
// faults write (KindProxyToxic). The proxy child process itself is recorded
// as faults.KindProcess, whose reverter is in faults.BuiltinReverters. The
// map is new on every call, so the caller may merge it into its own.
func ProxyReverters() map[string]faults.Reverter {
	return map[string]faults.Reverter{KindProxyToxic: RevertToxic}
}

// Toxics is where toxic faults add and remove their toxics: a *Proxy in
// this process or a *ProxyProcess for a proxy in a child process. Both
// methods are safe for concurrent use; RemoveToxic is idempotent.
type Toxics interface {
	// AddToxic adds a toxic; it applies to open connections at once.
	AddToxic(ctx context.Context, spec ToxicSpec) error
	// RemoveToxic removes the named toxic; an unknown name, or a proxy
	// that is gone, is not an error.
	RemoveToxic(ctx context.Context, name string) error
	// ControlPath is the unix socket through which another process can
	// remove toxics after a crash, or "" when the proxy lives in this
	// process and dies with it.
	ControlPath() string
	// Acted returns how many requests the L7 toxic called name acted on
	// (answered with its error, held, stalled, cut, slowed), before and
	// after its removal; 0 for an L4 toxic or a name never added.
	Acted(ctx context.Context, name string) (int64, error)
}

// ToxicSpec is a toxic as it travels to a proxy: its params are the JSON of
// one of the ProxyParams types.
type ToxicSpec struct {
	// Name identifies the toxic in its proxy: letters, digits, '.', '_', '-'.
	Name string `json:"name"`
	// Type is one of the Type* constants.
	Type string `json:"type"`
	// Seed seeds the toxic's random draws (jitter, per-request choices).
	Seed uint64 `json:"seed"`
	// Params are the type's parameters, defaults applied.
	Params json.RawMessage `json:"params"`
}

var toxicName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// parse decodes and validates s, returning its params with defaults.
func (s ToxicSpec) parse() (ProxyParams, error) {
	var errs []error
	if !toxicName.MatchString(s.Name) {
		errs = append(errs, fmt.Errorf("name %q: want 1 to 128 letters, digits, '.', '_' or '-'", s.Name))
	}
	p, err := NewProxyParams(s.Type)
	if err != nil {
		return nil, errors.Join(append(errs, err)...)
	}
	if len(bytes.TrimSpace(s.Params)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(s.Params))
		dec.DisallowUnknownFields()
		if err := dec.Decode(p); err != nil {
			return nil, errors.Join(append(errs, fmt.Errorf("params: %w", err))...)
		}
	}
	p = p.withDefaults()
	if err := p.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("toxic %q (%s): %w", s.Name, s.Type, errors.Join(errs...))
	}
	return p, nil
}

// ToxicFault is one toxic fault, ready to inject into its proxy: Inject adds
// the toxic, the Undo it returns removes it.
type ToxicFault struct {
	target Toxics
	spec   ToxicSpec
}

var _ faults.Fault = (*ToxicFault)(nil)

// NewToxic returns the fault that adds a toxic named name, of the type and
// parameters p (defaults applied here, then validated), to target. seed
// makes its random draws replayable; record it in the report.
func NewToxic(name string, target Toxics, p ProxyParams, seed uint64) (*ToxicFault, error) {
	if target == nil {
		return nil, fmt.Errorf("fault %q: no proxy to add the toxic to", name)
	}
	if p == nil {
		return nil, fmt.Errorf("fault %q: no params", name)
	}
	p = p.withDefaults()
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("fault %q: encode params: %w", name, err)
	}
	spec := ToxicSpec{Name: name, Type: p.Type(), Seed: seed, Params: raw}
	if _, err := spec.parse(); err != nil {
		return nil, fmt.Errorf("fault %q: %w", name, err)
	}
	return &ToxicFault{target: target, spec: spec}, nil
}

// Spec returns the toxic the fault adds.
func (f *ToxicFault) Spec() ToxicSpec { return f.spec }

// Inject records how to remove the toxic, then adds it to the proxy.
func (f *ToxicFault) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	data, err := json.Marshal(toxicRevert{Control: f.target.ControlPath(), Toxic: f.spec.Name})
	if err != nil {
		return nil, fmt.Errorf("fault %q: encode revert spec: %w", f.spec.Name, err)
	}
	if err := log.Will(faults.RevertSpec{Kind: KindProxyToxic, Data: data}); err != nil {
		return nil, fmt.Errorf("fault %q: %w", f.spec.Name, err)
	}
	if err := f.target.AddToxic(ctx, f.spec); err != nil {
		return nil, fmt.Errorf("fault %q: %w", f.spec.Name, err)
	}
	return func(ctx context.Context) error {
		if err := f.target.RemoveToxic(ctx, f.spec.Name); err != nil {
			return fmt.Errorf("fault %q: %w", f.spec.Name, err)
		}
		return nil
	}, nil
}

// Acted returns how many requests the fault's toxic acted on: for
// http.error the answers it made, for stream.cut the streams it cut, so
// that a run can tell the errors it made on purpose from the upstream's.
func (f *ToxicFault) Acted(ctx context.Context) (int64, error) {
	n, err := f.target.Acted(ctx, f.spec.Name)
	if err != nil {
		return 0, fmt.Errorf("fault %q: %w", f.spec.Name, err)
	}
	return n, nil
}

// toxicRevert is the data of a KindProxyToxic spec.
type toxicRevert struct {
	Control string `json:"control"`
	Toxic   string `json:"toxic"`
}

// RevertToxic is the Reverter of KindProxyToxic: it removes the toxic
// through the proxy's control socket. A proxy that lived in the crashed
// process (no control socket) or that is gone took the toxic with it, so
// that counts as reverted.
func RevertToxic(ctx context.Context, data json.RawMessage) error {
	var s toxicRevert
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("proxy toxic spec: %w", err)
	}
	if s.Control == "" {
		return nil
	}
	c := newControlClient(s.Control)
	defer c.close()
	// A proxy that dies while it answers (its owner was killed a moment
	// before, and the proxy follows it) cuts the request: ask again until
	// it answers or nobody listens any more, a bounded number of times.
	var err error
	for try := 0; try < cutRetries; try++ {
		if err = c.remove(ctx, s.Toxic); err == nil || proxyGone(err) {
			return nil
		}
		if !proxyCut(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(cutBackoff):
		}
	}
	return err
}

// cutRetries and cutBackoff bound how long RevertToxic waits for a proxy
// that cut its control request to either answer or be gone (2 s).
const (
	cutRetries = 20
	cutBackoff = 100 * time.Millisecond
)

// runtimeToxic is a toxic as a proxy runs it: an *l4Toxic or an *l7Toxic.
type runtimeToxic interface {
	toxicName() string
}

// lockedRand is a seeded generator shared by the connections of one toxic.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newLockedRand(seed uint64) *lockedRand {
	// The second PCG word is fixed: the seed alone names the sequence.
	return &lockedRand{r: rand.New(rand.NewPCG(seed, 0x6c6c6d6368616f73))}
}

func (l *lockedRand) float64() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Float64()
}

// jitter returns d plus a uniform draw in [-j, +j], never below zero.
func (l *lockedRand) jitter(d, j time.Duration) time.Duration {
	if j <= 0 {
		return d
	}
	l.mu.Lock()
	off := time.Duration(l.r.Int64N(int64(2*j)+1)) - j
	l.mu.Unlock()
	return max(0, d+off)
}
