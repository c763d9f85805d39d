package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The states and health statuses of a container, as the engine names them.
const (
	StateRunning    = "running"
	HealthStarting  = "starting"
	HealthUnhealthy = "unhealthy"
)

// Container is a container as the engine lists it: the fields llmchaos
// reads.
type Container struct {
	ID     string `json:"Id"`
	Names  []string
	Labels map[string]string
	// State is created, running, paused, restarting, removing, exited or
	// dead; Status says it for people ("Up 2 minutes (healthy)").
	State  string
	Status string
	// Health is the health check's summary (API 1.52 and later; older
	// engines tell it only in Status).
	Health *struct{ Status string } `json:",omitempty"`
}

// ContainerInfo is a container as the engine inspects it: the fields
// llmchaos reads.
type ContainerInfo struct {
	ID           string `json:"Id"`
	Name         string
	RestartCount int
	State        *ContainerState
}

// ContainerState is the state of an inspected container.
type ContainerState struct {
	Status     string
	Running    bool
	Paused     bool
	Restarting bool
	Pid        int
	ExitCode   int
	StartedAt  string
	FinishedAt string
}

// Filters narrow a list or an event stream: each term (label, name, type,
// event, container) to any of its values.
type Filters map[string][]string

// query sets the filters parameter of q, in the engine's JSON form.
func (f Filters) query(q url.Values) {
	if len(f) == 0 {
		return
	}
	m := make(map[string]map[string]bool, len(f))
	for term, vs := range f {
		m[term] = make(map[string]bool, len(vs))
		for _, v := range vs {
			m[term][v] = true
		}
	}
	b, _ := json.Marshal(m) // maps of strings always marshal
	q.Set("filters", string(b))
}

// containerPath is the API path of a container's resource ("" for the
// container itself).
func containerPath(id, what string) (string, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return "", errors.New("docker: empty container id")
	}
	p := "/containers/" + url.PathEscape(id)
	if what != "" {
		p += "/" + what
	}
	return p, nil
}

// ContainerList lists the containers that pass the filters: running
// ones, or all when all is set.
func (c *Client) ContainerList(ctx context.Context, all bool, f Filters) ([]Container, error) {
	q := url.Values{}
	if all {
		q.Set("all", "1")
	}
	f.query(q)
	res, err := c.do(ctx, http.MethodGet, "/containers/json", q, nil)
	if err != nil {
		return nil, err
	}
	defer drain(res)
	var cs []Container
	if err := json.NewDecoder(res.Body).Decode(&cs); err != nil {
		return nil, fmt.Errorf("docker engine at %s: container list: %w", c.host, err)
	}
	return cs, nil
}

// ContainerInspect returns the container id (a name, an id or its
// prefix).
func (c *Client) ContainerInspect(ctx context.Context, id string) (ContainerInfo, error) {
	p, err := containerPath(id, "json")
	if err != nil {
		return ContainerInfo{}, err
	}
	res, err := c.do(ctx, http.MethodGet, p, nil, nil)
	if err != nil {
		return ContainerInfo{}, err
	}
	defer drain(res)
	var info ContainerInfo
	if err := json.NewDecoder(res.Body).Decode(&info); err != nil {
		return ContainerInfo{}, fmt.Errorf("docker engine at %s: inspect %s: %w", c.host, id, err)
	}
	return info, nil
}

// post sends a POST without a body to a container's resource and reads
// nothing of the answer but its status.
func (c *Client) post(ctx context.Context, id, what string, q url.Values) error {
	p, err := containerPath(id, what)
	if err != nil {
		return err
	}
	res, err := c.do(ctx, http.MethodPost, p, q, nil)
	if err != nil {
		return err
	}
	drain(res)
	return nil
}

// ContainerStart starts the container (docker start); starting one that
// runs is no error.
func (c *Client) ContainerStart(ctx context.Context, id string) error {
	return c.post(ctx, id, "start", nil)
}

// ContainerStop stops the container (docker stop): its stop signal, then
// SIGKILL after seconds (negative: the container's own stop timeout).
func (c *Client) ContainerStop(ctx context.Context, id string, seconds int) error {
	q := url.Values{}
	if seconds >= 0 {
		q.Set("t", strconv.Itoa(seconds))
	}
	return c.post(ctx, id, "stop", q)
}

// ContainerKill sends the signal ("SIGTERM", "9"; "" is SIGKILL) to the
// container's main process through the engine (docker kill).
func (c *Client) ContainerKill(ctx context.Context, id, signal string) error {
	q := url.Values{}
	if signal != "" {
		q.Set("signal", signal)
	}
	return c.post(ctx, id, "kill", q)
}

// ContainerPause freezes the container's processes (docker pause).
func (c *Client) ContainerPause(ctx context.Context, id string) error {
	return c.post(ctx, id, "pause", nil)
}

// ContainerUnpause thaws a paused container (docker unpause).
func (c *Client) ContainerUnpause(ctx context.Context, id string) error {
	return c.post(ctx, id, "unpause", nil)
}
