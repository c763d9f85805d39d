// Package router is a request router in front of the simulator's
// replicas that migrates a stream when its replica dies, as Dynamo's
// request migration does: it sends the request again to another replica
// with the tokens generated so far as context (server.ResumeHeader), and
// the client's stream continues where it broke. A faithful migration
// (MigrateClean) gives the same answer; MigrateDuplicate resends a span of
// tokens the client already has, and MigrateDrop skips one, as routers
// that miscount what they relayed do, so that integrity checks and
// consistency probes have something real to find.
package router

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/simcontract/simconfig"
)

// Migration modes (Config.Mode).
const (
	// MigrateOff cuts a stream whose replica died (no migration).
	MigrateOff = simconfig.MigrateOff
	// MigrateClean continues the stream on another replica from the
	// token it reached: the same answer, after a gap.
	MigrateClean = simconfig.MigrateClean
	// MigrateDuplicate continues it Span tokens early: the client gets
	// those tokens twice.
	MigrateDuplicate = simconfig.MigrateDuplicate
	// MigrateDrop continues it Span tokens late: the client never gets
	// those tokens.
	MigrateDrop = simconfig.MigrateDrop
)

// Defaults of Config.
const (
	DefaultSpan          = 4
	DefaultHeaderTimeout = 5 * time.Second
	maxBody              = 16 << 20
)

// Config configures a Router.
type Config struct {
	// Upstreams returns the base URLs (scheme://host:port) of the
	// replicas that serve now; the router asks it for every request and
	// every migration, so a replica that died is left out as soon as its
	// supervisor says so.
	Upstreams func() []string
	// Mode is how a broken stream is migrated (MigrateOff, MigrateClean,
	// MigrateDuplicate, MigrateDrop).
	Mode string
	// Span is the tokens MigrateDuplicate resends or MigrateDrop skips.
	// Default DefaultSpan.
	Span int
	// HeaderTimeout bounds the wait for a replica's answer headers before
	// the next replica is tried. Default DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// Logger receives one line per migration. Default: discarded.
	Logger *slog.Logger
}

// Router routes requests round-robin over the serving replicas and
// migrates broken streams. It is an http.Handler, safe for concurrent use.
type Router struct {
	cfg    Config
	client *http.Client
	next   atomic.Uint64
}

// New returns the router of cfg.
func New(cfg Config) (*Router, error) {
	switch cfg.Mode {
	case MigrateOff, MigrateClean, MigrateDuplicate, MigrateDrop:
	default:
		return nil, fmt.Errorf("migrate %q: want %s, %s, %s or empty (off)", cfg.Mode, MigrateClean, MigrateDuplicate, MigrateDrop)
	}
	if cfg.Upstreams == nil {
		return nil, errors.New("router: no upstreams")
	}
	if cfg.Span == 0 {
		cfg.Span = DefaultSpan
	}
	if cfg.Span < 0 {
		return nil, fmt.Errorf("migrate span %d: must be positive", cfg.Span)
	}
	if cfg.HeaderTimeout == 0 {
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Router{cfg: cfg, client: &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: cfg.HeaderTimeout}}}, nil
}

// errNoReplica answers when no replica serves.
var errNoReplica = errors.New("no replica is serving")

// send sends the request to the serving replicas in turn, starting with
// the next in round-robin order and leaving out skip, until one answers
// with something else than 503 (not ready); resume, when not negative, is
// sent as server.ResumeHeader.
func (rt *Router) send(ctx context.Context, r *http.Request, body []byte, skip string, resume int) (*http.Response, string, error) {
	ups := rt.cfg.Upstreams()
	start := int(rt.next.Add(1))
	var last error = errNoReplica
	for i := range ups {
		up := ups[(start+i)%len(ups)]
		if up == skip {
			continue
		}
		req, err := http.NewRequestWithContext(ctx, r.Method, up+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			return nil, "", err
		}
		for k, vs := range r.Header {
			if k != "Connection" && k != "Content-Length" {
				req.Header[k] = vs
			}
		}
		if resume >= 0 {
			req.Header.Set(server.ResumeHeader, strconv.Itoa(resume))
		}
		resp, err := rt.client.Do(req)
		if err != nil {
			last = err
			continue
		}
		if resp.StatusCode == http.StatusServiceUnavailable && i < len(ups)-1 {
			resp.Body.Close()
			last = fmt.Errorf("%s: not ready", up)
			continue
		}
		return resp, up, nil
	}
	return nil, "", last
}

// ServeHTTP routes one request.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, up, err := rt.send(r.Context(), r, body, "", -1)
	if err != nil {
		http.Error(w, fmt.Sprintf(`{"error":{"message":%q,"type":"router_error"}}`, err.Error()), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if k != "Content-Length" && k != "Connection" {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix([]byte(resp.Header.Get("Content-Type")), []byte("text/event-stream")) {
		_, _ = io.Copy(w, resp.Body)
		return
	}
	rt.relay(r, w, body, resp, up)
}

// relay copies a stream's events to the client, counting the content
// tokens relayed, and migrates the stream when it breaks before [DONE].
func (rt *Router) relay(r *http.Request, w http.ResponseWriter, body []byte, resp *http.Response, up string) {
	fl := http.NewResponseController(w)
	st := &relayState{}
	if st.copy(w, fl, resp.Body) {
		return
	}
	for tries := 0; rt.cfg.Mode != MigrateOff && r.Context().Err() == nil && tries < 3; tries++ {
		from := st.pos
		switch rt.cfg.Mode {
		case MigrateDuplicate:
			from = max(0, from-rt.cfg.Span)
		case MigrateDrop:
			from += rt.cfg.Span
		}
		next, nup, err := rt.send(r.Context(), r, body, up, from)
		if err != nil {
			rt.cfg.Logger.Warn("migration failed", "from_replica", up, "err", err)
			return
		}
		if next.StatusCode != http.StatusOK {
			rt.cfg.Logger.Warn("migration refused", "from_replica", up, "to_replica", nup, "status", next.StatusCode)
			next.Body.Close()
			return
		}
		rt.cfg.Logger.Info("migrated a stream", "from_replica", up, "to_replica", nup, "answer_tokens", st.pos, "resume_from", from, "mode", rt.cfg.Mode)
		st.resumed, st.from, st.pos = true, from, from
		done := st.copy(w, fl, next.Body)
		next.Body.Close()
		if done {
			return
		}
		up = nup
	}
}

// relayState is one client stream across the replicas it was served by.
type relayState struct {
	id      string // the response id the client saw first
	pos     int    // the answer's tokens generated so far: the next token's index (one per content chunk)
	resumed bool   // the stream continues on another replica
	from    int    // the token the continuation started at
}

// chunk is what the router reads of a chunk.
type chunk struct {
	ID      string `json:"id"`
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

// copy relays events from src until [DONE] (true) or until src breaks
// (false). A continuation's events carry the first replica's id, its
// role-only first chunk is left out, and its usage counts the whole answer.
func (st *relayState) copy(w io.Writer, fl *http.ResponseController, src io.Reader) bool {
	br := bufio.NewReaderSize(src, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return false
		}
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: "))
		if !ok {
			continue // blank separators and comments: each event is written whole below
		}
		if string(data) == "[DONE]" {
			_, _ = io.WriteString(w, "data: [DONE]\n\n")
			_ = fl.Flush()
			return true
		}
		var c chunk
		if json.Unmarshal(data, &c) != nil {
			continue
		}
		if st.id == "" {
			st.id = c.ID
		}
		content := len(c.Choices) > 0 && (c.Choices[0].Delta.Content != "" || c.Choices[0].Text != "")
		if st.resumed {
			if len(c.Choices) > 0 && c.Choices[0].Delta.Role != "" && !content && c.Choices[0].FinishReason == nil {
				continue
			}
			data = st.rewrite(data)
		}
		if content {
			st.pos++
		}
		_, _ = w.Write(append(append([]byte("data: "), data...), '\n', '\n'))
		_ = fl.Flush()
	}
}

// rewrite gives a continuation's chunk the client's id and, for its usage
// chunk, the whole answer's counts: the tokens resumed from were
// generated, not prompt.
func (st *relayState) rewrite(data []byte) []byte {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return data
	}
	m["id"] = st.id
	if u, ok := m["usage"].(map[string]any); ok {
		if p, ok := u["prompt_tokens"].(float64); ok {
			u["prompt_tokens"] = p - float64(st.from)
		}
		if c, ok := u["completion_tokens"].(float64); ok {
			u["completion_tokens"] = c + float64(st.from)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return data
	}
	return out
}
