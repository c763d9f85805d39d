package network

import (
	"net/http"
	"strconv"

	"github.com/llmchaos/llmchaos/faults"
)

// HTTPErrorParams configure http.error: a matching request is answered by
// the proxy with Status and an OpenAI error body
// ({"error":{"message","type","param","code"}}), and never reaches the
// upstream.
type HTTPErrorParams struct {
	RequestMatch `yaml:",inline"`
	// Status is the HTTP status (default 503); 429, 500 and 503 are the
	// usual ones, any 4xx or 5xx is allowed.
	Status int `json:"status,omitempty" yaml:"status,omitempty" doc:"HTTP status answered (400 to 599)" default:"503"`
	// Message is the error message ("" → "llmchaos: injected 503 Service
	// Unavailable", from Status).
	Message string `json:"message,omitempty" yaml:"message,omitempty" doc:"error message in the OpenAI error body" default:"llmchaos: injected STATUS TEXT"`
}

// Type implements ProxyParams.
func (p *HTTPErrorParams) Type() string { return TypeHTTPError }

func (p *HTTPErrorParams) withDefaults() ProxyParams {
	q := *p
	q.RequestMatch = q.RequestMatch.withDefaults()
	if q.Status == 0 {
		q.Status = 503
	}
	if q.Message == "" {
		q.Message = "llmchaos: injected " + strconv.Itoa(q.Status) + " " + http.StatusText(q.Status)
	}
	return &q
}

// Validate implements ProxyParams.
func (p *HTTPErrorParams) Validate() error {
	ps := p.RequestMatch.problems()
	if p.Status < 400 || p.Status > 599 {
		ps.AddNamed("status", ": %d, want an error status (400 to 599)", p.Status)
	}
	return ps.Err()
}

func (p *HTTPErrorParams) build(seed uint64) runtimeToxic {
	status, msg := p.Status, p.Message
	return newL7Toxic(p.RequestMatch, seed, func(f *fate, self *l7Toxic) {
		if f.errStatus == 0 {
			f.errStatus, f.errMessage, f.errBy = status, msg, self
		}
	})
}

// httpErrorType describes its fault type for Types.
func httpErrorType() faults.Type {
	return toxicType[HTTPErrorParams](TypeHTTPError, "answer matching requests with an HTTP error and an OpenAI error body", true, faults.Sustained,
		"status: 503\nprobability: 0.3")
}
