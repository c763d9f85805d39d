package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
)

// DefaultUserAgent is the user agent of a Config that names none.
const DefaultUserAgent = "llmchaos"

// Client sends requests to one API server. Safe for concurrent use.
type Client struct {
	base    *url.URL
	hc      *http.Client
	limit   *limiter
	timeout time.Duration
}

// New returns the client of cfg.
func New(cfg *Config) (*Client, error) {
	if cfg.Host == "" {
		return nil, errors.New("no server: the configuration names no host")
	}
	host := cfg.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	base, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", cfg.Host, err)
	}
	if base.Scheme != "https" && base.Scheme != "http" {
		return nil, fmt.Errorf("server %q: scheme %q, want https or http", cfg.Host, base.Scheme)
	}
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	hc, err := HTTPClientFor(&c)
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", cfg.Host, err)
	}
	cl := &Client{base: base, hc: hc, timeout: cfg.Timeout}
	if cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("burst must be above 0 when QPS is set (QPS %v, burst %d)", cfg.QPS, cfg.Burst)
		}
		cl.limit = newLimiter(cfg.QPS, cfg.Burst)
	}
	return cl, nil
}

// Path is where a request goes: a resource path and its query.
type Path struct {
	// Prefix is "/api/v1" for the core group, "/apis/GROUP/VERSION" else,
	// or a whole path (discovery).
	Prefix string
	// Namespace, Resource, Name and Subresource make the rest of the path
	// (each left out when "").
	Namespace, Resource, Name, Subresource string
}

// GroupPrefix returns the path prefix of group version gv ("v1" for the
// core group).
func GroupPrefix(group, version string) string {
	if group == "" {
		return "/api/" + version
	}
	return "/apis/" + group + "/" + version
}

// String returns p as a URL path.
func (p Path) String() string {
	var b strings.Builder
	b.WriteString(p.Prefix)
	if p.Namespace != "" {
		b.WriteString("/namespaces/" + url.PathEscape(p.Namespace))
	}
	for _, s := range []string{p.Resource, p.Name, p.Subresource} {
		if s != "" {
			b.WriteString("/" + url.PathEscape(s))
		}
	}
	return b.String()
}

// what names p's object for errors: "pods", "pods sim-0".
func (p Path) what() (resource, name string) {
	resource = p.Resource
	if p.Subresource != "" {
		resource += "/" + p.Subresource
	}
	return resource, p.Name
}

// Request is one request.
type Request struct {
	Method string
	Path   Path
	Query  url.Values
	// Body is sent as JSON unless it is a []byte (sent as is, with
	// ContentType).
	Body        any
	ContentType string
	// Timeout bounds the request (0: the client's).
	Timeout time.Duration
}

// Do sends r and decodes the answer into out (nil: drop it). A refusal or
// failure of the server is an *apierrors.StatusError.
func (c *Client) Do(ctx context.Context, r Request, out any) error {
	timeout := r.Timeout
	if timeout == 0 {
		timeout = c.timeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", r.Method, r.Path, err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w", r.Method, r.Path, err)
	}
	return nil
}

// Stream sends r and returns the body of its answer, for the caller to
// read and close (pod logs).
func (c *Client) Stream(ctx context.Context, r Request) (io.ReadCloser, error) {
	resp, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// maxRetries bounds the retries of a request the server asked to be sent
// again later (429, or 5xx with Retry-After), as client-go's REST client
// bounds them.
const maxRetries = 10

// send sends r and returns its answer when its status is 2xx; else the
// error the answer says. An answer of 429 Too Many Requests (API priority
// and fairness on a busy server) or 5xx with a Retry-After is sent again
// after the seconds it names, up to maxRetries times, as client-go does:
// the body is bytes, so every try sends the same.
func (c *Client) send(ctx context.Context, r Request) (*http.Response, error) {
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + r.Path.String()
	u.RawQuery = r.Query.Encode()
	var data []byte
	contentType := r.ContentType
	switch b := r.Body.(type) {
	case nil:
	case []byte:
		data = b
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			return nil, fmt.Errorf("%s %s: encoding the body: %w", r.Method, r.Path, err)
		}
		if contentType == "" {
			contentType = "application/json"
		}
	}
	for try := 0; ; try++ {
		if err := c.limit.wait(ctx); err != nil {
			return nil, fmt.Errorf("%s %s: waiting for the client's rate limit: %w", r.Method, r.Path, err)
		}
		var body io.Reader
		if r.Body != nil {
			body = bytes.NewReader(data)
		}
		req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), body)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", r.Method, r.Path, err)
		}
		req.Header.Set("Accept", "application/json, */*")
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return nil, err // *url.Error says the method and URL
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		wait, again := retryAfter(resp)
		if !again || try == maxRetries {
			return nil, statusError(resp.StatusCode, r, answer)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%s %s: waiting %v to send again as the server asked: %w (its answer: %w)",
				r.Method, r.Path, wait, ctx.Err(), statusError(resp.StatusCode, r, answer))
		case <-t.C:
		}
	}
}

// retryAfter returns how long to wait before sending again the request
// resp answered, and whether to: for 429 and 5xx that say Retry-After in
// whole seconds (as client-go reads it), those seconds, at most
// maxRetryAfter.
func retryAfter(resp *http.Response) (time.Duration, bool) {
	if code := resp.StatusCode; code != http.StatusTooManyRequests && code < 500 {
		return 0, false
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs < 0 {
		return 0, false
	}
	return min(time.Duration(secs)*time.Second, maxRetryAfter), true
}

// maxRetryAfter caps the wait a Retry-After may ask for.
const maxRetryAfter = 10 * time.Second

// statusError returns the error of an answer with HTTP status code: the
// Status in its body, or one made from the code.
func statusError(code int, r Request, body []byte) error {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
		if st.Code == 0 {
			st.Code = int32(code)
		}
		return apierrors.FromStatus(st)
	}
	resource, name := r.Path.what()
	return apierrors.NewGenericServerResponse(code, r.Method, resource, name, string(body))
}
