package gameday

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

//go:embed static
var staticFiles embed.FS

// DefaultHolder names the holder of the access token made when no name is
// given.
const DefaultHolder = "facilitator"

// cookiePrefix starts the name of the cookie a console's token is kept
// in; its name ends with the server's port, so that game days on one host
// keep apart.
const cookiePrefix = "llmchaos_gameday_"

// maxBody bounds a request's JSON body.
const maxBody = 64 << 10

// Token is an access token and the name of its holder, who is named in
// the run's events for every action taken with it.
type Token struct {
	Holder string `json:"holder"`
	Secret string `json:"-"`
}

// CheckHolders reports the first token holder name NewTokens would refuse
// (a name it cannot carry, or one named twice), so that a front end can
// refuse it as bad input before anything starts.
func CheckHolders(holders []string) error {
	seen := map[string]bool{}
	for _, h := range holders {
		if !validHolder(h) {
			return fmt.Errorf("token holder %q: use 1 to 40 letters, digits, '.', '_' and '-'", h)
		}
		if seen[h] {
			return fmt.Errorf("token holder %q is named twice", h)
		}
		seen[h] = true
	}
	return nil
}

// NewTokens makes one random token per holder ("facilitator" when none
// is named). Holder names are letters, digits, '.', '_' and '-'.
func NewTokens(holders []string) ([]Token, error) {
	if len(holders) == 0 {
		holders = []string{DefaultHolder}
	}
	seen := map[string]bool{}
	out := make([]Token, 0, len(holders))
	for _, h := range holders {
		if !validHolder(h) {
			return nil, fmt.Errorf("token holder %q: use 1 to 40 letters, digits, '.', '_' and '-'", h)
		}
		if seen[h] {
			return nil, fmt.Errorf("token holder %q is named twice", h)
		}
		seen[h] = true
		b := make([]byte, 18)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("make an access token: %w", err)
		}
		out = append(out, Token{Holder: h, Secret: base64.RawURLEncoding.EncodeToString(b)})
	}
	return out, nil
}

func validHolder(h string) bool {
	if h == "" || len(h) > 40 {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// CheckListen refuses an address that is not on the loopback interface
// unless remote access is allowed: the console breaks services.
func CheckListen(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w (want HOST:PORT, e.g. 127.0.0.1:0)", addr, err)
	}
	if allowRemote {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--listen %s is not a loopback address: anyone who reaches it with the token can break the service; add --allow-remote to serve it there", addr)
}

// ServerOptions configure a console server.
type ServerOptions struct {
	// Live is the control of the live run the console drives.
	Live *experiments.Control
	// Spec is the experiment (with its defaults), for the console's title.
	Spec *spec.Spec
	// Tokens are the access tokens; at least one.
	Tokens []Token
	// RunDir is the run directory, shown in the console.
	RunDir string
	// Port ends the name of the token's cookie.
	Port int
}

// Server is a game day's console: its page, its API and its live stream.
type Server struct {
	opts ServerOptions
	hub  *hub
	mux  *http.ServeMux
	// cop refuses the requests that a browser says come from another
	// origin (Sec-Fetch-Site, else an Origin that is not the request's
	// host).
	cop *http.CrossOriginProtection
}

// NewServer returns the console of opts.Live. Run its hub with Run.
func NewServer(opts ServerOptions) *Server {
	s := &Server{opts: opts, hub: newHub(opts.Live), mux: http.NewServeMux(), cop: http.NewCrossOriginProtection()}
	s.routes()
	return s
}

// Run makes the live stream's messages until ctx ends or the run is
// done.
func (s *Server) Run(ctx context.Context) { s.hub.run(ctx) }

// End sends the consoles the game day's end (and closes their streams).
func (s *Server) End(e Ended) { s.hub.end(e) }

// StreamCPU is the CPU time the live stream has spent making and sending
// its messages (0 where it is not measured).
func (s *Server) StreamCPU() time.Duration { return time.Duration(s.hub.cpu.Load()) }

// ServeHTTP serves the console: every path needs a token (401 without).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if r.URL.Path == "/" && r.URL.Query().Has("token") {
		s.login(w, r)
		return
	}
	who, cookie, ok := s.holder(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="llmchaos gameday"`)
		writeError(w, http.StatusUnauthorized, "an access token is needed: open the URL llmchaos gameday printed, or send Authorization: Bearer TOKEN", nil)
		return
	}
	if cookie && !safeMethod(r.Method) {
		// The cookie goes with any request the browser makes to this
		// host, whatever page made it, and SameSite does not tell another
		// port of 127.0.0.1 apart: a request that changes something must
		// prove it comes from the console's own page.
		if err := s.cop.Check(r); err != nil {
			writeError(w, http.StatusForbidden, "refused: a request that changes the game day must come from the console's own page ("+err.Error()+"); from a script, send Authorization: Bearer TOKEN", nil)
			return
		}
		if r.Header.Get(ConsoleHeader) != "1" {
			writeError(w, http.StatusForbidden, "refused: a request that changes the game day must come from the console's own page (it sends "+ConsoleHeader+": 1, which no form of another page can); from a script, send Authorization: Bearer TOKEN", nil)
			return
		}
	}
	ctx := context.WithValue(r.Context(), holderKey{}, who)
	if cookie {
		ctx = context.WithValue(ctx, cookieKey{}, true)
	}
	s.mux.ServeHTTP(w, r.WithContext(ctx))
}

// ConsoleHeader is the header the console's page sends with every request,
// set to 1. A request authenticated by the console's cookie that changes
// something (any method but GET, HEAD and OPTIONS) is refused without it:
// a form of another page cannot set a header, and a script of another
// origin that sets one must ask first (CORS), which this server never
// allows. Requests with a bearer token need not send it.
const ConsoleHeader = "X-Llmchaos-Console"

// safeMethod reports whether method changes nothing on the server.
func safeMethod(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

// cookieKey marks a request let through by the console's cookie (not a
// bearer token): its bodies must be JSON, which a form of another site
// cannot send.
type cookieKey struct{}

// holderKey keys the token holder in a request's context.
type holderKey struct{}

// who is the token holder of a request the server let through.
func who(r *http.Request) string {
	h, _ := r.Context().Value(holderKey{}).(string)
	return h
}

// holder returns the holder of the request's token: a bearer token, or
// the console's cookie (then cookie is set).
func (s *Server) holder(r *http.Request) (who string, cookie, ok bool) {
	if a := r.Header.Get("Authorization"); a != "" {
		tok, found := strings.CutPrefix(a, "Bearer ")
		if !found {
			return "", false, false
		}
		who, ok = s.match(strings.TrimSpace(tok))
		return who, false, ok
	}
	if c, err := r.Cookie(s.cookieName()); err == nil {
		who, ok = s.match(c.Value)
		return who, true, ok
	}
	return "", false, false
}

// match returns the holder of token tok, comparing in constant time.
func (s *Server) match(tok string) (string, bool) {
	for _, t := range s.opts.Tokens {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(t.Secret)) == 1 {
			return t.Holder, true
		}
	}
	return "", false
}

func (s *Server) cookieName() string { return cookiePrefix + strconv.Itoa(s.opts.Port) }

// login takes the token of the console's URL into a cookie and sends the
// browser to the page without it (so that it stays out of the history).
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	tok := r.URL.Query().Get("token")
	if _, ok := s.match(tok); !ok {
		writeError(w, http.StatusUnauthorized, "this access token is not one of this game day's", nil)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// routes registers the page and the API.
func (s *Server) routes() {
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(static)
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		http.ServeFileFS(w, r, static, "index.html")
	})
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", files))
	s.mux.HandleFunc("GET /api/faults", s.faultTypes)
	s.mux.HandleFunc("POST /api/faults", s.inject)
	s.mux.HandleFunc("GET /api/active", s.active)
	s.mux.HandleFunc("DELETE /api/active/{name}", s.revert)
	s.mux.HandleFunc("POST /api/revert-all", s.revertAll)
	s.mux.HandleFunc("GET /api/notes", s.notes)
	s.mux.HandleFunc("POST /api/notes", s.addNote)
	s.mux.HandleFunc("GET /api/load", s.load)
	s.mux.HandleFunc("POST /api/load", s.setLoad)
	s.mux.HandleFunc("GET /api/timeline", s.timeline)
	s.mux.HandleFunc("POST /api/timeline/{op}", s.timelineOp)
	s.mux.HandleFunc("GET /api/status", s.status)
	s.mux.HandleFunc("GET /api/events", s.events)
	s.mux.HandleFunc("GET /api/stream", s.hub.serveStream)
	s.mux.HandleFunc("POST /api/end", s.end)
	s.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such API path: "+r.Method+" "+r.URL.Path+" (see the package documentation of gameday, or docs/gameday.md)", nil)
	})
}

// errorBody is the body of every error answer.
type errorBody struct {
	Error    string    `json:"error"`
	Refused  string    `json:"refused,omitempty"`
	Problems []problem `json:"problems,omitempty"`
}

type problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string, body *errorBody) {
	if body == nil {
		body = &errorBody{}
	}
	body.Error = msg
	writeJSON(w, status, body)
}

// actionError answers an action's error with its status: 503 not started
// or ended, 404 no such fault, 409 refused, 400 invalid, else fallback.
func actionError(w http.ResponseWriter, err error, fallback int) {
	switch {
	case errors.Is(err, experiments.ErrLiveNotStarted), errors.Is(err, experiments.ErrLiveEnded):
		writeError(w, http.StatusServiceUnavailable, err.Error(), nil)
	case errors.Is(err, experiments.ErrNoSuchFault):
		writeError(w, http.StatusNotFound, err.Error(), nil)
	default:
		if re, ok := errors.AsType[*experiments.RefusedError](err); ok {
			writeError(w, http.StatusConflict, err.Error(), &errorBody{Refused: re.Reason})
			return
		}
		if ie, ok := errors.AsType[*experiments.InvalidFaultError](err); ok {
			b := &errorBody{}
			for _, p := range ie.Problems {
				b.Problems = append(b.Problems, problem{Path: string(p.Path), Message: p.Message(nil)})
			}
			writeError(w, http.StatusBadRequest, err.Error(), b)
			return
		}
		writeError(w, fallback, err.Error(), nil)
	}
}

// decode reads a JSON body into v strictly: an unknown key is an error.
// A console's request (cookie) must say its body is JSON; a bearer
// token's may say anything (curl -d sends a form's type).
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); r.Context().Value(cookieKey{}) != nil && !strings.HasPrefix(ct, "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "send the body as application/json", nil)
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		writeError(w, http.StatusBadRequest, "the body is not the JSON expected: "+err.Error(), nil)
		return false
	}
	return true
}

func (s *Server) faultTypes(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"types": Catalogue()})
}

// injectRequest is POST /api/faults's body.
type injectRequest struct {
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Params   map[string]any    `json:"params"`
	Target   *spec.FaultTarget `json:"target"`
	Duration durationValue     `json:"duration"`
}

// durationValue is a duration written as "30s", or as a number of
// seconds.
type durationValue time.Duration

func (d *durationValue) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s == "" {
			*d = 0
			return nil
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want e.g. \"30s\" or \"2m\"", s)
		}
		*d = durationValue(v)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("duration %s: want e.g. \"30s\", or a number of seconds", b)
	}
	*d = durationValue(f * float64(time.Second))
	return nil
}

func (s *Server) inject(w http.ResponseWriter, r *http.Request) {
	var req injectRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Type == "" {
		writeError(w, http.StatusBadRequest, "type is missing: name a fault type (GET /api/faults lists them)", nil)
		return
	}
	a, err := s.opts.Live.Inject(experiments.ManualFault{
		Name: req.Name, Type: req.Type, Params: integral(req.Params).(map[string]any), Target: req.Target, Duration: time.Duration(req.Duration),
	}, who(r))
	if err != nil {
		actionError(w, err, http.StatusBadGateway)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"fault": a})
}

// integral turns the whole numbers JSON decoded as float64 into int64, as
// an experiment file's YAML reads them, so that integer params take them.
func integral(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = integral(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = integral(e)
		}
		return v
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v)
		}
	}
	return v
}

func (s *Server) active(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"faults": s.opts.Live.Active()})
}

func (s *Server) revert(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := s.opts.Live.Revert(name, who(r)); err != nil {
		actionError(w, err, http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"reverted": name})
}

func (s *Server) revertAll(w http.ResponseWriter, r *http.Request) {
	if err := s.opts.Live.RevertAll(who(r)); err != nil {
		actionError(w, err, http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"active": s.opts.Live.Active()})
}

// noteOf is a note as the API shows it.
type noteOf struct {
	AtS    float64 `json:"at_s"`
	Detail string  `json:"detail"`
	By     string  `json:"by,omitempty"`
}

func (s *Server) notes(w http.ResponseWriter, _ *http.Request) {
	evs, _ := s.opts.Live.Events(0)
	out := []noteOf{}
	for _, e := range evs {
		if e.Source == report.EventSourceGameDay && e.Kind == "note" {
			out = append(out, noteOf{AtS: e.AtS, Detail: e.Detail, By: e.By})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"notes": out})
}

func (s *Server) addNote(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Text string `json:"text"`
	}
	if !decode(w, r, &req) {
		return
	}
	e, err := s.opts.Live.Note(req.Text, who(r))
	if err != nil {
		if errors.Is(err, experiments.ErrLiveNotStarted) || errors.Is(err, experiments.ErrLiveEnded) {
			actionError(w, err, http.StatusInternalServerError)
			return
		}
		writeError(w, http.StatusBadRequest, err.Error(), nil)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"note": noteOf{AtS: e.AtS, Detail: e.Detail, By: e.By}})
}

func (s *Server) load(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.opts.Live.Load())
}

func (s *Server) setLoad(w http.ResponseWriter, r *http.Request) {
	var req experiments.LoadChange
	if !decode(w, r, &req) {
		return
	}
	st, err := s.opts.Live.SetLoad(req, who(r))
	if err != nil {
		actionError(w, err, http.StatusBadRequest)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) timeline(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.opts.Live.Timeline())
}

func (s *Server) timelineOp(w http.ResponseWriter, r *http.Request) {
	l := s.opts.Live
	var err error
	switch op := r.PathValue("op"); op {
	case "play":
		err = l.PlayTimeline(who(r))
	case "pause":
		err = l.PauseTimeline(who(r))
	case "step":
		err = l.StepTimeline(who(r))
	case "skip":
		err = l.SkipTimeline(who(r))
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("timeline operation %q: want play, pause, step or skip", op), nil)
		return
	}
	if err != nil {
		actionError(w, err, http.StatusBadGateway)
		return
	}
	writeJSON(w, http.StatusOK, l.Timeline())
}

// presetOf is a workload preset the load may switch to.
type presetOf struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// statusBody is GET /api/status's answer.
type statusBody struct {
	Experiment string                 `json:"experiment"`
	Who        string                 `json:"who"`
	RunDir     string                 `json:"run_dir"`
	Status     experiments.LiveStatus `json:"status"`
	Load       experiments.LoadState  `json:"load"`
	Mode       string                 `json:"mode"`
	Targets    experiments.Targets    `json:"targets"`
	Thresholds []string               `json:"thresholds,omitempty"`
	Recovery   map[string]float64     `json:"recovery,omitempty"`
	Presets    []presetOf             `json:"presets"`
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	l := s.opts.Live
	b := statusBody{Who: who(r), RunDir: s.opts.RunDir, Status: l.Status(), Load: l.Load(), Mode: "rate", Targets: l.Targets(r.Context())}
	for _, p := range workload.Presets() {
		b.Presets = append(b.Presets, presetOf{Name: p.Name, Description: p.Description})
	}
	if b.Load.Users > 0 {
		b.Mode = "users"
	}
	if sp := s.opts.Spec; sp != nil {
		b.Experiment = sp.Metadata.Name
		for k, exprs := range sp.Thresholds {
			for _, e := range exprs {
				b.Thresholds = append(b.Thresholds, k+": "+e.Threshold)
			}
		}
		b.Recovery = map[string]float64{"window_s": sp.Recovery.Window.D().Seconds(), "hold_s": sp.Recovery.Hold.D().Seconds(), "latency_band": sp.Recovery.LatencyBand}
	}
	writeJSON(w, http.StatusOK, b)
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	from := 0
	if v := r.URL.Query().Get("from"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "from: want the index of the first event, from 0", nil)
			return
		}
		from = n
	}
	evs, next := s.opts.Live.Events(from)
	if evs == nil {
		evs = []report.EventRecord{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": evs, "next": next})
}

func (s *Server) end(w http.ResponseWriter, r *http.Request) {
	if err := s.opts.Live.End(who(r)); err != nil {
		actionError(w, err, http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"ending": true, "run_dir": s.opts.RunDir})
}
