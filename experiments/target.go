package experiments

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
)

// endpoint is one endpoint of the target.
type endpoint struct {
	// url is the endpoint's base URL of the API, as the spec gives it or
	// as a simulator replica serves it (http://127.0.0.1:8000/v1). Results
	// are tagged with it.
	url string
	// load is where the engine sends: the proxy's address when one is in
	// front of the endpoint, else url.
	load string
	// proxy is the proxy in front of the endpoint, nil when none is.
	proxy *runProxy
}

// hostPort returns the host:port of a base URL, with the scheme's default
// port when it has none.
func hostPort(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("endpoint %q is not an absolute URL", base)
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	switch u.Scheme {
	case "https":
		return u.Host + ":443", nil
	default:
		return u.Host + ":80", nil
	}
}

// throughProxy returns base with its host replaced by the proxy's address.
func throughProxy(base, addr string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.Host = addr
	return u.String()
}

// rootURL returns the scheme, host and port of a base URL, which is what
// {{target}} in a probe URL stands for.
func rootURL(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	return u.Scheme + "://" + u.Host
}

// modelsTimeout bounds the /v1/models request that finds the model of an
// llm target that names none.
const modelsTimeout = 10 * time.Second

// firstModel asks base's /models for the models it serves and returns the
// first; modelKey is the spec key that names the model, for the error that
// asks for it.
func firstModel(ctx context.Context, hc *http.Client, base string, header http.Header, modelKey string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	u := strings.TrimRight(base, "/") + "/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("model: the target names none and GET %s failed: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("model: GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("model: the target names none and GET %s answered %d: set %s", u, resp.StatusCode, modelKey)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return "", fmt.Errorf("model: GET %s: %w", u, err)
	}
	if len(list.Data) == 0 || list.Data[0].ID == "" {
		return "", errors.New("model: the target names none and " + u + " lists none: set " + modelKey)
	}
	return list.Data[0].ID, nil
}

// headerOf returns an llm target's extra headers as an http.Header.
func headerOf(h map[string]string) http.Header {
	if len(h) == 0 {
		return nil
	}
	out := make(http.Header, len(h))
	for k, v := range h {
		out.Set(k, v)
	}
	return out
}

// modelsHeader is what the /models request of a target that names no model
// carries: the target's headers and its API key (the variable of
// api_key_env, else the client's default, as the load's requests), since
// servers that check keys check them there too (vLLM --api-key).
func modelsHeader(t spec.LLMTarget) http.Header {
	h := headerOf(t.Headers)
	if key := os.Getenv(cmp.Or(t.APIKeyEnv, client.DefaultAPIKeyEnv)); key != "" {
		if h == nil {
			h = make(http.Header)
		}
		h.Set("Authorization", "Bearer "+key)
	}
	return h
}
