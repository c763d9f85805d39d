package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// PreflightTimeout bounds the whole check of one target (the /models
// read and the one-token completion).
const PreflightTimeout = 30 * time.Second

// maxModelsBody bounds the /models answer read.
const maxModelsBody = 1 << 20

// PreflightError says that a target can never answer the load as
// configured: the server refused the check for a reason the load cannot
// change (a model it does not serve, a path it does not have, a key it
// does not accept). Msg holds the server's own words.
type PreflightError struct {
	Target string
	Msg    string
	// Hint, when set, is what is likely wrong in the configuration.
	Hint string
}

func (e *PreflightError) Error() string {
	s := fmt.Sprintf("pre-flight check of %s failed: %s", e.Target, e.Msg)
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s + "; nothing was sent (--no-preflight skips the check)"
}

// PreflightConfig is what Preflight checks.
type PreflightConfig struct {
	Targets []string
	Model   string
	// Chat selects /chat/completions for the one-token request, else
	// /completions.
	Chat bool
	// Client holds the options the load's client uses (key, headers,
	// HTTP/2, TLS); the check builds its own client from them.
	Client client.Options
}

// Preflight checks, before a load starts, that each target can succeed:
// GET TARGET/models must list the model (the OpenAI and vLLM model list);
// when it does not answer with a list that holds the model, one
// non-cancelled request with max_tokens 1 must be accepted. A target
// that refuses for good (HTTP 4xx other than 408 and 429: a wrong model, a
// base URL without /v1, a refused key) makes Preflight return a
// *PreflightError with the server's message. A target that does not answer
// or answers 5xx, 408 or 429 may be starting up or under the very fault
// the run studies: it is returned as a warning, and the load goes on.
func Preflight(ctx context.Context, cfg PreflightConfig) (warnings []string, err error) {
	copts := cfg.Client
	copts.Clock, copts.Concurrency = nil, 1
	client, err := client.New(copts)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	header := preflightHeader(cfg.Client)
	hc := &http.Client{Transport: client.RoundTripper()} // the client's TLS, dial and Resolve; its Close closes the connection
	var errs []error
	for _, t := range cfg.Targets {
		w, err := checkTarget(ctx, hc, header, client, t, cfg)
		if w != "" {
			warnings = append(warnings, w)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return warnings, errors.Join(errs...)
}

// preflightHeader is the header the load's client sends (the key as a
// bearer token, the custom headers), for the /models read.
func preflightHeader(o client.Options) http.Header {
	h := make(http.Header)
	env, getenv := o.APIKeyEnv, o.Getenv
	if env == "" {
		env = client.DefaultAPIKeyEnv
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	key := o.APIKey
	if key == "" {
		key = getenv(env)
	}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	for k, vs := range o.Headers {
		h[http.CanonicalHeaderKey(k)] = slices.Clone(vs)
	}
	return h
}

// checkTarget checks one target: its model list, else one request.
func checkTarget(parent context.Context, hc *http.Client, header http.Header, client *client.Client, target string, cfg PreflightConfig) (warning string, err error) {
	ctx, cancel := context.WithTimeout(parent, PreflightTimeout)
	defer cancel()
	served, status, msg := listModels(ctx, hc, header, target)
	switch {
	case slices.Contains(served, cfg.Model):
		return "", nil
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return "", &PreflightError{Target: target, Msg: fmt.Sprintf("GET /models: http %d: %s", status, msg),
			Hint: "the API key (--api-key-env) or headers are not accepted"}
	}

	req := &workload.Request{Chat: cfg.Chat, Model: cfg.Model, MaxTokens: 1, Stream: true, PromptTokens: 1}
	if cfg.Chat {
		req.Messages = []workload.Message{{Role: "user", Content: "hi"}}
	} else {
		req.Prompt = "hi"
	}
	var res recording.Result
	client.Do(ctx, target, req, &res)
	if res.Outcome == recording.OutcomeOK {
		return "", nil
	}
	if err := parent.Err(); err != nil {
		return "", err
	}
	if res.Class != recording.ClassHTTP4xx || res.HTTPStatus == http.StatusRequestTimeout {
		return fmt.Sprintf("pre-flight check of %s did not succeed (%s: %s); the load starts anyway", target, res.Class, res.Err), nil
	}
	e := &PreflightError{Target: target, Msg: res.Err}
	switch {
	case len(served) > 0 && !slices.Contains(served, cfg.Model):
		e.Hint = fmt.Sprintf("model %q is not served there; it serves %s", cfg.Model, strings.Join(served, ", "))
	case res.HTTPStatus == http.StatusUnauthorized || res.HTTPStatus == http.StatusForbidden:
		e.Hint = "the API key (--api-key-env) or headers are not accepted"
	case res.HTTPStatus == http.StatusNotFound && !strings.HasSuffix(strings.TrimRight(target, "/"), "/v1"):
		e.Hint = "the base URL usually ends in /v1"
	}
	return "", e
}

// listModels reads TARGET/models: the model ids when it answered with an
// OpenAI model list, else the status and the server's message.
func listModels(ctx context.Context, hc *http.Client, header http.Header, target string) (ids []string, status int, msg string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(target, "/")+"/models", nil)
	if err != nil {
		return nil, 0, err.Error()
	}
	req.Header = header.Clone()
	if h := header.Get("Host"); h != "" {
		req.Host = h
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxModelsBody))
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, strings.TrimSpace(errorText(body))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil {
		return nil, resp.StatusCode, ""
	}
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, resp.StatusCode, ""
}

// errorText is the message of an OpenAI-style error body, else the body,
// bounded.
func errorText(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	s := string(body)
	if json.Unmarshal(body, &e) == nil {
		if e.Error.Message != "" {
			s = e.Error.Message
		} else if e.Message != "" {
			s = e.Message
		}
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
