package network

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"time"
)

// The control API of a proxy child process, served on a unix socket:
//
//	GET    /proxy          → {"addr","upstream","mode","pid"}
//	GET    /toxics         → [ToxicSpec, ...]
//	POST   /toxics         ← ToxicSpec → 201; 400 invalid; 409 name in use
//	DELETE /toxics/{name}  → 204 (also when there is no such toxic)
//	GET    /toxics/{name}/acted → {"acted": N}: requests an L7 toxic acted on, before and after its removal
//
// Errors are {"error": "..."}.

// controlInfo is the answer of GET /proxy.
type controlInfo struct {
	Addr     string `json:"addr"`
	Upstream string `json:"upstream"`
	Mode     Mode   `json:"mode"`
	PID      int    `json:"pid"`
}

// controlBodyLimit bounds a control request body.
const controlBodyLimit = 1 << 20

// controlHandler serves the control API of p.
func controlHandler(p *Proxy) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /proxy", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, controlInfo{Addr: p.Addr(), Upstream: p.Upstream(), Mode: p.Mode(), PID: os.Getpid()})
	})
	mux.HandleFunc("GET /toxics", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, p.Toxics())
	})
	mux.HandleFunc("POST /toxics", func(w http.ResponseWriter, r *http.Request) {
		var spec ToxicSpec
		dec := json.NewDecoder(io.LimitReader(r.Body, controlBodyLimit))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec); err != nil {
			writeJSON(w, http.StatusBadRequest, controlError{Error: "decode toxic: " + err.Error()})
			return
		}
		if err := p.AddToxic(r.Context(), spec); err != nil {
			status := http.StatusBadRequest
			if errors.Is(err, ErrToxicExists) {
				status = http.StatusConflict
			}
			writeJSON(w, status, controlError{Error: err.Error()})
			return
		}
		writeJSON(w, http.StatusCreated, spec)
	})
	mux.HandleFunc("GET /toxics/{name}/acted", func(w http.ResponseWriter, r *http.Request) {
		n, err := p.Acted(r.Context(), r.PathValue("name"))
		if err != nil {
			writeJSON(w, http.StatusInternalServerError, controlError{Error: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, actedAnswer{Acted: n})
	})
	mux.HandleFunc("DELETE /toxics/{name}", func(w http.ResponseWriter, r *http.Request) {
		if err := p.RemoveToxic(r.Context(), r.PathValue("name")); err != nil {
			writeJSON(w, http.StatusInternalServerError, controlError{Error: err.Error()})
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

type controlError struct {
	Error string `json:"error"`
}

// actedAnswer is the answer of GET /toxics/{name}/acted.
type actedAnswer struct {
	Acted int64 `json:"acted"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encode answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// controlClient talks to a proxy's control socket.
type controlClient struct {
	path string
	hc   *http.Client
}

func newControlClient(path string) *controlClient {
	var d net.Dialer
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     30 * time.Second,
	}
	return &controlClient{path: path, hc: &http.Client{Transport: tr}}
}

// do sends one request and decodes a JSON answer into out (when not nil).
func (c *controlClient) do(ctx context.Context, method, path string, in, out any, want int) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("proxy control: encode: %w", err)
		}
		body = bytes.NewReader(b)
	}
	u := url.URL{Scheme: "http", Host: "proxy", Path: path}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fmt.Errorf("proxy control: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("proxy control %s: %s %s: %w", c.path, method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, controlBodyLimit))
	if err != nil {
		return fmt.Errorf("proxy control %s: %s %s: read answer: %w", c.path, method, path, err)
	}
	if resp.StatusCode != want {
		var ce controlError
		if json.Unmarshal(b, &ce) == nil && ce.Error != "" {
			return fmt.Errorf("proxy control %s: %s %s: %s: %s", c.path, method, path, resp.Status, ce.Error)
		}
		return fmt.Errorf("proxy control %s: %s %s: %s", c.path, method, path, resp.Status)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("proxy control %s: %s %s: decode answer: %w", c.path, method, path, err)
		}
	}
	return nil
}

func (c *controlClient) add(ctx context.Context, spec ToxicSpec) error {
	return c.do(ctx, http.MethodPost, "/toxics", spec, nil, http.StatusCreated)
}

func (c *controlClient) remove(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/toxics/"+url.PathEscape(name), nil, nil, http.StatusNoContent)
}

func (c *controlClient) list(ctx context.Context) ([]ToxicSpec, error) {
	var out []ToxicSpec
	err := c.do(ctx, http.MethodGet, "/toxics", nil, &out, http.StatusOK)
	return out, err
}

func (c *controlClient) acted(ctx context.Context, name string) (int64, error) {
	var out actedAnswer
	err := c.do(ctx, http.MethodGet, "/toxics/"+url.PathEscape(name)+"/acted", nil, &out, http.StatusOK)
	return out.Acted, err
}

func (c *controlClient) info(ctx context.Context) (controlInfo, error) {
	var out controlInfo
	err := c.do(ctx, http.MethodGet, "/proxy", nil, &out, http.StatusOK)
	return out, err
}

func (c *controlClient) close() { c.hc.CloseIdleConnections() }

// proxyGone reports whether err says that nobody listens on the control
// socket any more: the proxy, and its toxics, are gone.
func proxyGone(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// proxyCut reports whether err says that the proxy closed the control
// connection before it answered: a proxy on its way out, or one that
// closed an idle connection as the request went out.
func proxyCut(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
