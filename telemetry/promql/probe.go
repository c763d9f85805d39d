package promql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Spec is the promql block of an experiment file.
type Spec struct {
	URL    string `yaml:"url" json:"url"`       // Prometheus base URL (or its /api/v1/query)
	Query  string `yaml:"query" json:"query"`   // PromQL, evaluated as an instant query
	Expect string `yaml:"expect" json:"expect"` // e.g. "< 0.5"
}

// Validate reports every problem of s at once.
func (s Spec) Validate() error {
	var errs []error
	if _, err := QueryURL(s.URL); err != nil {
		errs = append(errs, err)
	}
	if strings.TrimSpace(s.Query) == "" {
		errs = append(errs, errors.New("promql: query is empty"))
	}
	if _, err := ParseExpect(s.Expect); err != nil {
		errs = append(errs, fmt.Errorf("promql: %w", err))
	}
	return errors.Join(errs...)
}

// QueryURL returns the instant query endpoint of a Prometheus URL: base
// URLs get /api/v1/query appended (after any path prefix, for servers behind
// a proxy); a URL that already ends in it is kept.
func QueryURL(base string) (string, error) {
	if base == "" {
		return "", errors.New("promql: url is empty; give the Prometheus server, e.g. http://127.0.0.1:9090")
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("promql: url %q: %w", base, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("promql: url %q: want http:// or https:// and a host", base)
	}
	if !strings.HasSuffix(u.Path, "/api/v1/query") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/query"
		u.RawPath = ""
	}
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}

// DefaultTimeout bounds one Check when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Options tunes a Probe; the zero value is ready to use.
type Options struct {
	Timeout time.Duration // one Check, sent to the server too (DefaultTimeout)
	Client  *http.Client  // http.DefaultClient when nil
}

// Probe checks one Spec. It is immutable and safe for concurrent use.
type Probe struct {
	url     string
	query   string
	expect  Expect
	timeout time.Duration
	client  *http.Client
}

// New validates spec and returns its Probe.
func New(spec Spec, opts Options) (*Probe, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	u, _ := QueryURL(spec.URL)         // checked by Validate
	exp, _ := ParseExpect(spec.Expect) // checked by Validate
	p := &Probe{url: u, query: spec.Query, expect: exp, timeout: opts.Timeout, client: opts.Client}
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	if p.client == nil {
		p.client = http.DefaultClient
	}
	return p, nil
}

// Sample is one element of a query's result: its labels (nil for a scalar)
// and value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// String writes the sample as {a="b"} 0.5.
func (s Sample) String() string {
	if len(s.Labels) == 0 {
		return strconv.FormatFloat(s.Value, 'g', -1, 64)
	}
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, s.Labels[k])
	}
	b.WriteString("} ")
	b.WriteString(strconv.FormatFloat(s.Value, 'g', -1, 64))
	return b.String()
}

// Result is a decided check.
type Result struct {
	Query   string
	Expect  Expect
	Type    string    // "scalar" or "vector"
	At      time.Time // the evaluation time the server reports
	Samples []Sample  // the result (one for a scalar)
	Failing []Sample  // the samples that do not satisfy Expect
	OK      bool      // every sample satisfies Expect
}

// String summarises the result for logs and reports.
func (r *Result) String() string {
	verdict := "ok"
	shown := r.Samples
	if !r.OK {
		verdict = "FAILED"
		shown = r.Failing
	}
	parts := make([]string, 0, min(len(shown), 3))
	for i, s := range shown {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(shown)-3))
			break
		}
		parts = append(parts, s.String())
	}
	return fmt.Sprintf("promql %s: %s (want %s): %s", r.Query, strings.Join(parts, ", "), r.Expect, verdict)
}

// ErrNoData is returned when a vector query matched no series.
var ErrNoData = errors.New("query returned no data (empty vector)")

// APIError is an error answer of the query API, or an HTTP error without one.
type APIError struct {
	StatusCode int    // HTTP status
	Type       string // Prometheus' errorType: bad_data, timeout, execution, ... ("" when none was sent)
	Message    string
}

func (e *APIError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("HTTP %d: %s", e.StatusCode, e.Message)
	}
	return fmt.Sprintf("%s (HTTP %d): %s", e.Type, e.StatusCode, e.Message)
}

// apiResponse is the query API's JSON envelope.
type apiResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// Check runs the query once and compares; see the package documentation.
func (p *Probe) Check(ctx context.Context) (*Result, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	form := url.Values{"query": {p.query}, "timeout": {p.timeout.String()}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, p.wrap(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, p.wrap(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, p.wrap(fmt.Errorf("read answer: %w", err))
	}
	var body apiResponse
	if jerr := json.Unmarshal(raw, &body); jerr != nil || body.Status == "" {
		if resp.StatusCode/100 != 2 {
			return nil, p.wrap(&APIError{StatusCode: resp.StatusCode, Message: snippet(raw)})
		}
		return nil, p.wrap(fmt.Errorf("answer is not the query API's JSON: %s", snippet(raw)))
	}
	if body.Status != "success" {
		return nil, p.wrap(&APIError{StatusCode: resp.StatusCode, Type: body.ErrorType, Message: body.Error})
	}
	res := &Result{Query: p.query, Expect: p.expect, Type: body.Data.ResultType}
	switch body.Data.ResultType {
	case "scalar":
		var pair [2]json.RawMessage
		if err := json.Unmarshal(body.Data.Result, &pair); err != nil {
			return nil, p.wrap(fmt.Errorf("scalar result: %w", err))
		}
		at, v, err := decodePoint(pair)
		if err != nil {
			return nil, p.wrap(fmt.Errorf("scalar result: %w", err))
		}
		res.At = at
		res.Samples = []Sample{{Value: v}}
	case "vector":
		var elems []struct {
			Metric map[string]string  `json:"metric"`
			Value  [2]json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(body.Data.Result, &elems); err != nil {
			return nil, p.wrap(fmt.Errorf("vector result: %w", err))
		}
		if len(elems) == 0 {
			return nil, p.wrap(ErrNoData)
		}
		for _, e := range elems {
			at, v, err := decodePoint(e.Value)
			if err != nil {
				return nil, p.wrap(fmt.Errorf("vector result: %w", err))
			}
			res.At = at
			res.Samples = append(res.Samples, Sample{Labels: e.Metric, Value: v})
		}
	default:
		return nil, p.wrap(fmt.Errorf("result type %q is not supported: write a query that returns a scalar or an instant vector", body.Data.ResultType))
	}
	for _, s := range res.Samples {
		if !p.expect.Holds(s.Value) {
			res.Failing = append(res.Failing, s)
		}
	}
	res.OK = len(res.Failing) == 0
	return res, nil
}

func (p *Probe) wrap(err error) error {
	return fmt.Errorf("promql %s at %s: %w", p.query, p.url, err)
}

// decodePoint decodes [unix seconds (number), "value" (string)].
func decodePoint(pair [2]json.RawMessage) (time.Time, float64, error) {
	var ts float64
	if err := json.Unmarshal(pair[0], &ts); err != nil {
		return time.Time{}, 0, fmt.Errorf("timestamp %s: %w", pair[0], err)
	}
	var s string
	if err := json.Unmarshal(pair[1], &s); err != nil {
		return time.Time{}, 0, fmt.Errorf("value %s: %w", pair[1], err)
	}
	v, err := strconv.ParseFloat(s, 64) // also "NaN", "+Inf", "-Inf"
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("value %q: %w", s, err)
	}
	sec, frac := math.Modf(ts)
	return time.Unix(int64(sec), int64(math.Round(frac*1e3))*1e6), v, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
