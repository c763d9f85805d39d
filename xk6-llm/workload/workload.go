package workload

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"

	"github.com/llmchaos/llmchaos/internal/field"
)

// Workload draws what to send for each arrival (open loop) or each
// iteration of a virtual user (closed loop). A plain request is a session of
// one turn; later turns of a session are sent by the engine Session.ThinkTime
// after the previous turn ended, with the conversation so far (BuildRequest,
// AppendTurn).
//
// Next is safe for concurrent use. It is deterministic: the same config,
// the same construction rng and the same sequence of (rng, Arrival) calls
// give the same sessions. a carries a replayed trace's lengths (zero
// otherwise): a synthetic workload builds the first turn's prompt to
// a.InputTokens (the whole prompt, as the server counts it, so chat message
// overheads and a shared prefix are taken out) and uses a.OutputTokens as
// its max_tokens; a dataset workload takes a.OutputTokens only.
type Workload interface {
	Next(rng *rand.Rand, a Arrival) *Session
}

// APIKind is the OpenAI-compatible API a workload speaks.
type APIKind string

// API kinds.
const (
	APIChat        APIKind = "chat"        // POST /chat/completions with messages
	APICompletions APIKind = "completions" // POST /completions with a prompt
)

// Config describes what a run sends, one field per flag of
// `llmchaos load`. Validate reports every problem and fills nothing;
// WithDefaults fills the documented defaults; a preset's config is combined
// with the user's by Overlay.
type Config struct {
	// Name is the request class tag of every result (--class; a preset
	// sets its own name). Default "custom".
	Name string
	// API is chat or completions (--api). Default chat.
	API APIKind

	// InputTokens is the length of each synthetic user turn in tokens
	// (--input-tokens): the user message's content for chat, the prompt
	// text for completions; chat message overheads and a shared prefix
	// come on top. Required without a dataset; not allowed with one.
	InputTokens Dist
	// OutputTokens is sent as max_tokens (--output-tokens). With a
	// dataset it replaces the dataset's lengths. Unset: max_tokens is not
	// sent (or the dataset's length is).
	OutputTokens Dist
	// MinTokens is sent as min_tokens, capped at each request's max_tokens
	// (--min-tokens; 0: not sent).
	MinTokens int
	// IgnoreEOS asks the server to generate exactly max_tokens
	// (--ignore-eos, vLLM's extension).
	IgnoreEOS bool

	// Dataset is a prompt dataset file (--dataset); DatasetFormat its
	// format (--dataset-format; auto-detected when empty). See LoadDataset.
	Dataset       string
	DatasetFormat DatasetFormat

	// PrefixCount shared system prompts of PrefixTokens tokens each are
	// made at start (--prefix-count, --prefix-tokens); a session uses one
	// of them, picked uniformly, with probability PrefixShare
	// (--prefix-share; default 1 when prefixes are asked for), so servers
	// with prefix caching can reuse them.
	PrefixCount  int
	PrefixTokens int
	PrefixShare  float64

	// Turns is the number of user turns per synthetic session (--turns;
	// unset: 1). ThinkTime is the pause after a turn's reply before the
	// next turn (--session-think-time), drawn once per session.
	Turns     Dist
	ThinkTime DurationDist

	// CancelShare is the share of requests the client cancels on purpose
	// (--cancel-share; default 1 when a cancel-after is given): after
	// CancelAfterTokens content chunks (--cancel-after-tokens) and/or
	// CancelAfter since send (--cancel-after), whichever comes first. A
	// cancelled request is "cancelled", not an error.
	CancelShare       float64
	CancelAfterTokens Dist
	CancelAfter       DurationDist
}

// WithDefaults returns c with the documented defaults filled in: Name
// "custom", API chat, PrefixShare 1 when prefixes are asked for, CancelShare
// 1 when a cancel-after is given. Fields already set are kept.
func (c Config) WithDefaults() Config {
	if c.Name == "" {
		c.Name = "custom"
	}
	if c.API == "" {
		c.API = APIChat
	}
	if c.PrefixShare == 0 && c.PrefixCount > 0 && c.PrefixTokens > 0 {
		c.PrefixShare = 1
	}
	if c.CancelShare == 0 && (!c.CancelAfterTokens.IsZero() || !c.CancelAfter.IsZero()) {
		c.CancelShare = 1
	}
	return c
}

// Overlay returns the preset config c with the user's settings u on top:
// each field u sets (non-zero) wins, and IgnoreEOS is on when either sets
// it. When u names a dataset, c's synthetic lengths (InputTokens,
// OutputTokens) are dropped first, since a dataset brings its own.
func (c Config) Overlay(u Config) Config {
	if u.Dataset != "" {
		c.InputTokens, c.OutputTokens = Dist{}, Dist{}
	}
	if u.Name != "" {
		c.Name = u.Name
	}
	if u.API != "" {
		c.API = u.API
	}
	if !u.InputTokens.IsZero() {
		c.InputTokens = u.InputTokens
	}
	if !u.OutputTokens.IsZero() {
		c.OutputTokens = u.OutputTokens
	}
	if u.MinTokens != 0 {
		c.MinTokens = u.MinTokens
	}
	c.IgnoreEOS = c.IgnoreEOS || u.IgnoreEOS
	if u.Dataset != "" {
		c.Dataset = u.Dataset
	}
	if u.DatasetFormat != "" {
		c.DatasetFormat = u.DatasetFormat
	}
	if u.PrefixCount != 0 {
		c.PrefixCount = u.PrefixCount
	}
	if u.PrefixTokens != 0 {
		c.PrefixTokens = u.PrefixTokens
	}
	if u.PrefixShare != 0 {
		c.PrefixShare = u.PrefixShare
	}
	if !u.Turns.IsZero() {
		c.Turns = u.Turns
	}
	if !u.ThinkTime.IsZero() {
		c.ThinkTime = u.ThinkTime
	}
	if u.CancelShare != 0 {
		c.CancelShare = u.CancelShare
	}
	if !u.CancelAfterTokens.IsZero() {
		c.CancelAfterTokens = u.CancelAfterTokens
	}
	if !u.CancelAfter.IsZero() {
		c.CancelAfter = u.CancelAfter
	}
	return c
}

// Validate reports every problem with c at once (a field.Problems), each
// keyed by its field (FieldInputTokens, ...). It fills no defaults: call
// WithDefaults first.
func (c Config) Validate() error { return c.Problems().Err() }

// Problems returns every problem with c, keyed by field.
func (c Config) Problems() field.Problems {
	var ps field.Problems
	bad := ps.Add
	dist := func(f field.Path, d Dist) {
		if err := d.Validate(); err != nil {
			bad(f, "%s %s: %w", f, d, err)
		}
	}
	if c.Name == "" {
		bad(FieldClass, "%s is empty (defaults not applied)", FieldClass)
	}
	switch c.API {
	case APIChat, APICompletions:
	case "":
		bad(FieldAPI, "%s is empty (defaults not applied): want chat or completions", FieldAPI)
	default:
		bad(FieldAPI, "%s %q: want chat or completions", FieldAPI, c.API)
	}
	dist(FieldInputTokens, c.InputTokens)
	dist(FieldOutputTokens, c.OutputTokens)
	dist(FieldTurns, c.Turns)
	dist(FieldCancelAfterTokens, c.CancelAfterTokens)
	if c.Dataset == "" {
		if c.InputTokens.IsZero() {
			ps = append(ps, field.Problem{Path: FieldInputTokens, Format: "%s is required without %s", Args: []any{FieldInputTokens, FieldDataset}, Missing: true})
		}
		if c.DatasetFormat != "" {
			bad(FieldDatasetFormat, "%s given without %s", FieldDatasetFormat, FieldDataset)
		}
	} else {
		if !c.InputTokens.IsZero() {
			bad(FieldInputTokens, "%s and %s are both set: a dataset brings its own prompts", FieldInputTokens, FieldDataset)
		}
		if !c.Turns.IsZero() {
			bad(FieldTurns, "%s applies to synthetic sessions; a dataset's conversations bring their own turns", FieldTurns)
		}
		switch c.DatasetFormat {
		case DatasetAuto, DatasetShareGPT, DatasetJSONL:
		default:
			bad(FieldDatasetFormat, "%s %q: want sharegpt or jsonl", FieldDatasetFormat, c.DatasetFormat)
		}
	}
	if c.MinTokens < 0 {
		bad(FieldMinTokens, "%s %d must be ≥ 0", FieldMinTokens, c.MinTokens)
	}
	if c.MinTokens > 0 && c.OutputTokens.IsZero() && c.Dataset == "" {
		bad(FieldMinTokens, "%s needs %s (min_tokens is capped at max_tokens)", FieldMinTokens, FieldOutputTokens)
	}
	if c.IgnoreEOS && c.OutputTokens.IsZero() && c.Dataset == "" {
		bad(FieldIgnoreEOS, "%s needs %s: without max_tokens the server would generate to its context limit", FieldIgnoreEOS, FieldOutputTokens)
	}

	if c.PrefixCount < 0 || c.PrefixTokens < 0 {
		bad(FieldPrefixCount, "%s %d and %s %d must be ≥ 0", FieldPrefixCount, c.PrefixCount, FieldPrefixTokens, c.PrefixTokens)
	}
	if (c.PrefixCount > 0) != (c.PrefixTokens > 0) {
		bad(FieldPrefixCount, "%s and %s go together (N prompts of L tokens)", FieldPrefixCount, FieldPrefixTokens)
	}
	if c.PrefixShare < 0 || c.PrefixShare > 1 || !finiteNum(c.PrefixShare) {
		bad(FieldPrefixShare, "%s %v must be in [0, 1]", FieldPrefixShare, c.PrefixShare)
	}
	if c.PrefixShare > 0 && c.PrefixCount == 0 {
		bad(FieldPrefixShare, "%s needs %s and %s", FieldPrefixShare, FieldPrefixCount, FieldPrefixTokens)
	}

	if err := c.ThinkTime.Validate(); err != nil {
		bad(FieldSessionThinkTime, "%s %s: %w", FieldSessionThinkTime, c.ThinkTime, err)
	}
	if !c.ThinkTime.IsZero() && c.Turns.IsZero() && c.Dataset == "" {
		bad(FieldSessionThinkTime, "%s needs %s: it is the pause between turns of a session", FieldSessionThinkTime, FieldTurns)
	}

	if c.CancelShare < 0 || c.CancelShare > 1 || !finiteNum(c.CancelShare) {
		bad(FieldCancelShare, "%s %v must be in [0, 1]", FieldCancelShare, c.CancelShare)
	}
	if err := c.CancelAfter.Validate(); err != nil {
		bad(FieldCancelAfter, "%s %s: %w", FieldCancelAfter, c.CancelAfter, err)
	}
	if c.CancelShare > 0 && c.CancelAfterTokens.IsZero() && c.CancelAfter.IsZero() {
		bad(FieldCancelShare, "%s needs %s or %s", FieldCancelShare, FieldCancelAfterTokens, FieldCancelAfter)
	}
	return ps
}

// New builds the workload c describes: it validates c, loads the
// dataset, and draws the shared prefixes, the prompt corpus and the dataset
// order from rng (used only here; Next takes the caller's).
func New(c Config, rng *rand.Rand) (Workload, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	w := &workload{cfg: c, builder: NewPromptBuilder(rng)}
	for range c.PrefixCount {
		// Ends in a newline so that a completions prompt of system + user
		// keeps exactly PrefixTokens + user tokens.
		p := []byte(w.builder.Build(rng, c.PrefixTokens))
		p[len(p)-1] = '\n'
		w.prefixes = append(w.prefixes, string(p))
	}
	if c.Dataset != "" {
		ds, err := LoadDataset(c.Dataset, c.DatasetFormat)
		if err != nil {
			return nil, fmt.Errorf("workload: %w", err)
		}
		if c.IgnoreEOS && c.OutputTokens.IsZero() {
			for i, e := range ds.Entries {
				for _, t := range e.Turns {
					if t.OutputTokens == 0 {
						return nil, fmt.Errorf("workload: %w", field.Errorf(FieldIgnoreEOS, "%s: dataset %s entry %d has a turn without an output length; set %s", FieldIgnoreEOS, c.Dataset, i, FieldOutputTokens))
					}
				}
			}
		}
		w.data = ds
		w.order = rng.Perm(len(ds.Entries))
	}
	return w, nil
}

// workload implements Workload for synthetic prompts and datasets.
type workload struct {
	cfg      Config
	builder  *PromptBuilder
	prefixes []string

	data   *Dataset
	order  []int         // a seeded permutation of data.Entries
	cursor atomic.Uint64 // next position in order (wraps)
}

var _ Workload = (*workload)(nil)

// Next draws one session.
func (w *workload) Next(rng *rand.Rand, a Arrival) *Session {
	c := &w.cfg
	s := &Session{Class: c.Name, Chat: c.API == APIChat}
	if len(w.prefixes) > 0 && rng.Float64() < c.PrefixShare {
		s.System = w.prefixes[rng.IntN(len(w.prefixes))]
		s.SystemTok = c.PrefixTokens
	}
	if w.data != nil {
		e := &w.data.Entries[w.order[(w.cursor.Add(1)-1)%uint64(len(w.order))]]
		if e.System != "" && s.System == "" {
			s.System, s.SystemTok = e.System, EstimateTokens(e.System)
		}
		s.Turns = make([]Turn, len(e.Turns))
		for i, dt := range e.Turns {
			out := dt.OutputTokens
			if !c.OutputTokens.IsZero() {
				out = c.OutputTokens.Sample(rng)
			}
			if i == 0 && a.OutputTokens > 0 {
				out = a.OutputTokens
			}
			s.Turns[i] = w.turn(rng, dt.User, EstimateTokens(dt.User), out)
		}
	} else {
		n := max(1, c.Turns.Sample(rng))
		s.Turns = make([]Turn, n)
		for i := range n {
			in, out := c.InputTokens.Sample(rng), c.OutputTokens.Sample(rng)
			if i == 0 && a.InputTokens > 0 {
				in = a.InputTokens - s.SystemTok
				if s.Chat {
					in -= ChatMessageOverheadTokens
					if s.System != "" {
						in -= ChatMessageOverheadTokens
					}
				}
				in = max(1, in)
			}
			if i == 0 && a.OutputTokens > 0 {
				out = a.OutputTokens
			}
			s.Turns[i] = w.turn(rng, w.builder.Build(rng, in), in, out)
		}
	}
	if len(s.Turns) > 1 {
		s.ThinkTime = c.ThinkTime.Sample(rng)
	}
	return s
}

func (w *workload) turn(rng *rand.Rand, user string, userTok, out int) Turn {
	c := &w.cfg
	t := Turn{User: user, UserTokens: userTok, MaxTokens: out, IgnoreEOS: c.IgnoreEOS}
	if c.MinTokens > 0 {
		t.MinTokens = c.MinTokens
		if out > 0 {
			t.MinTokens = min(c.MinTokens, out)
		}
	}
	if c.CancelShare > 0 && rng.Float64() < c.CancelShare {
		t.CancelAfterTokens = c.CancelAfterTokens.Sample(rng)
		t.CancelAfter = c.CancelAfter.Sample(rng)
	}
	return t
}

// BuildRequest builds the request for turn i of s. history holds the
// conversation before this turn, without the system prompt: the earlier
// turns' user messages and the replies the engine received, in order (see
// AppendTurn). Chat requests get the system prompt (if any), the history and
// the new user message; completions requests get one prompt of the system
// prompt, the history's contents and the new text, joined by newlines.
// PromptTokens is the estimate for exactly what is sent.
func BuildRequest(model string, s *Session, i int, history []Message) *Request {
	t := &s.Turns[i]
	r := &Request{
		Chat:              s.Chat,
		Model:             model,
		MaxTokens:         t.MaxTokens,
		MinTokens:         t.MinTokens,
		IgnoreEOS:         t.IgnoreEOS,
		Stream:            true,
		CancelAfterTokens: t.CancelAfterTokens,
		CancelAfter:       t.CancelAfter,
	}
	if s.Chat {
		msgs := make([]Message, 0, len(history)+2)
		if s.System != "" {
			msgs = append(msgs, Message{Role: "system", Content: s.System})
		}
		msgs = append(msgs, history...)
		msgs = append(msgs, Message{Role: "user", Content: t.User})
		r.Messages = msgs
		r.PromptTokens = EstimateChatTokens(msgs)
		return r
	}
	if s.System == "" && len(history) == 0 {
		r.Prompt = t.User
	} else {
		var b strings.Builder
		b.WriteString(s.System) // ends in a newline when made by a workload
		for _, m := range history {
			b.WriteString(m.Content)
			b.WriteByte('\n')
		}
		b.WriteString(t.User)
		r.Prompt = b.String()
	}
	r.PromptTokens = EstimateTokens(r.Prompt)
	return r
}

// AppendTurn returns history with turn t's user message and the reply the
// engine received for it appended: the history for the next turn.
func AppendTurn(history []Message, t Turn, reply string) []Message {
	return append(history, Message{Role: "user", Content: t.User}, Message{Role: "assistant", Content: reply})
}

// PlannedPromptTokens returns, for each turn of s, the estimated prompt
// tokens BuildRequest will give it if every earlier reply is exactly its
// max_tokens long (a reply of n tokens taken as 4n bytes): the session's
// planned context growth. Turns without max_tokens count their reply as 0.
func PlannedPromptTokens(s *Session) []int {
	out := make([]int, len(s.Turns))
	if s.Chat {
		ctx := 0
		if s.System != "" {
			ctx = EstimateTokens(s.System) + ChatMessageOverheadTokens
		}
		for i, t := range s.Turns {
			user := EstimateTokens(t.User) + ChatMessageOverheadTokens
			out[i] = ctx + user
			ctx += user + t.MaxTokens + ChatMessageOverheadTokens
		}
		return out
	}
	// Completions: one prompt of system, then each earlier message and a
	// newline, then the new text; tokens are counted over the whole.
	n := len(s.System)
	for i, t := range s.Turns {
		out[i] = (n + len(t.User) + BytesPerToken - 1) / BytesPerToken
		n += len(t.User) + 1 + t.MaxTokens*BytesPerToken + 1
	}
	return out
}
