package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// adminAuth checks bearer tokens in constant time. Both sides are hashed
// first so that the comparison does not leak the token's length either.
type adminAuth struct{ want [sha256.Size]byte }

func newAdminAuth(token string) *adminAuth { return &adminAuth{want: sha256.Sum256([]byte(token))} }

func (a *adminAuth) ok(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	token, found := strings.CutPrefix(h, "Bearer ")
	got := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(got[:], a.want[:]) == 1 && found
}

// faults is the error-injection state: a rate in [0, 1] and the kind of error.
type faults struct {
	mu   sync.Mutex
	rng  *rand.Rand
	rate float64
	kind string
}

func newFaults(seed int64) *faults {
	return &faults{rng: rand.New(rand.NewPCG(uint64(seed), 0x6661756c7473))} // "faults"
}

// errorKinds are the injectable errors, keyed by the kind the admin API takes.
var errorKinds = map[string]func(promptTokens, maxModelLen int) *apiError{
	"429": func(int, int) *apiError {
		return &apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
			Message: "The server is overloaded (injected by the llmchaos admin API). Retry later."}
	},
	"500": func(int, int) *apiError {
		return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "internal_error",
			Message: "The server had an error while processing your request (injected by the llmchaos admin API)."}
	},
	"503": func(int, int) *apiError {
		return &apiError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "service_unavailable",
			Message: "The server is not ready (injected by the llmchaos admin API)."}
	},
	"400": func(prompt, maxLen int) *apiError {
		e := paramError("messages", fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens in the messages (injected by the llmchaos admin API). Please reduce the length of the messages.", maxLen, max(prompt, maxLen+1)))
		e.Code = "context_length_exceeded"
		return e
	},
}

// draw returns the error to inject into this request, or nil.
func (f *faults) draw(promptTokens, maxModelLen int) *apiError {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rate <= 0 || f.rng.Float64() >= f.rate {
		return nil
	}
	return errorKinds[f.kind](promptTokens, maxModelLen)
}

func (s *server) adminRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /admin/slowdown", s.requireAdmin(s.handleSlowdown))
	mux.HandleFunc("POST /admin/errors", s.requireAdmin(s.handleErrors))
	mux.HandleFunc("POST /admin/hang", s.requireAdmin(s.handleHang))
	mux.HandleFunc("POST /admin/crash", s.requireAdmin(s.handleCrash))
	mux.HandleFunc("GET /admin/state", s.requireAdmin(s.handleAdminState))
}

func (s *server) requireAdmin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.admin.ok(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="llmchaos-sim admin"`)
			writeError(w, &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "invalid_api_key",
				Message: "missing or wrong admin bearer token"})
			return
		}
		h(w, r)
	}
}

// decodeAdmin reads a small JSON body into v.
func decodeAdmin(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	if err := dec.Decode(v); err != nil {
		writeError(w, badRequest("invalid JSON body: "+err.Error()))
		return false
	}
	return true
}

func (s *server) handleSlowdown(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Factor float64 `json:"factor"`
	}
	if !decodeAdmin(w, r, &body) {
		return
	}
	if err := s.live.SetSlowdown(body.Factor); err != nil {
		writeError(w, paramError("factor", err.Error()))
		return
	}
	s.log.Info("admin: slowdown", "factor", body.Factor)
	s.handleAdminState(w, r)
}

func (s *server) handleErrors(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Rate float64 `json:"rate"`
		Kind string  `json:"kind"`
	}
	if !decodeAdmin(w, r, &body) {
		return
	}
	if !(body.Rate >= 0 && body.Rate <= 1) {
		writeError(w, paramError("rate", fmt.Sprintf("rate %v is not in [0, 1]", body.Rate)))
		return
	}
	if _, ok := errorKinds[body.Kind]; !ok && body.Rate > 0 {
		writeError(w, paramError("kind", fmt.Sprintf("kind %q is not one of 429, 500, 503, 400", body.Kind)))
		return
	}
	s.faults.mu.Lock()
	s.faults.rate, s.faults.kind = body.Rate, body.Kind
	s.faults.mu.Unlock()
	s.log.Info("admin: error injection", "rate", body.Rate, "kind", body.Kind)
	s.handleAdminState(w, r)
}

func (s *server) handleHang(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Duration string `json:"duration"`
	}
	if !decodeAdmin(w, r, &body) {
		return
	}
	d, err := time.ParseDuration(body.Duration)
	if err != nil || d <= 0 {
		writeError(w, paramError("duration", fmt.Sprintf("duration %q is not a positive Go duration such as 5s", body.Duration)))
		return
	}
	s.live.Hang(d)
	s.log.Info("admin: hang", "duration", d)
	s.handleAdminState(w, r)
}

func (s *server) handleCrash(w http.ResponseWriter, _ *http.Request) {
	s.log.Info("admin: crash")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"status":"crashing"}` + "\n"))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	s.live.Crash()
}

func (s *server) handleAdminState(w http.ResponseWriter, _ *http.Request) {
	st := s.live.Stats()
	s.faults.mu.Lock()
	rate, kind := s.faults.rate, s.faults.kind
	s.faults.mu.Unlock()
	hang := max(st.HangUntil-st.Now, 0)
	dead := ""
	if st.Dead != nil {
		dead = st.Dead.Error()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"slowdown":        st.Slowdown,
		"error_rate":      rate,
		"error_kind":      kind,
		"hang_until":      hang,
		"running":         st.Running,
		"waiting":         st.Waiting,
		"kv_blocks_used":  st.UsedBlocks,
		"kv_blocks_total": st.TotalBlocks,
		"num_preemptions": st.Preemptions,
		"dead":            dead,
	})
}
