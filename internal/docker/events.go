package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// Event is one of the engine's events: the fields llmchaos reads.
type Event struct {
	// Type is what the event is about (container, image, network, …).
	Type string
	// Action is what happened: die, start, pause, health_status: healthy, …
	Action string
	Actor  Actor
	// Time is the engine's time of the event in seconds since the epoch,
	// TimeNano in nanoseconds (0 from engines that do not say).
	Time     int64 `json:"time,omitempty"`
	TimeNano int64 `json:"timeNano,omitempty"`
}

// Actor is the object of an event: its id and attributes (a container's
// name and labels, exitCode of a die).
type Actor struct {
	ID         string
	Attributes map[string]string
}

// EventStream is the engine's stream of events, read with Next by one
// goroutine; Close ends it.
type EventStream struct {
	ctx  context.Context
	body io.ReadCloser
	dec  *json.Decoder
	host string
}

// Events subscribes to the engine's events that pass the filters. It
// returns once the engine has answered the subscription: every later event
// is delivered. The stream ends with ctx or Close.
func (c *Client) Events(ctx context.Context, f Filters) (*EventStream, error) {
	q := url.Values{}
	f.query(q)
	h := http.Header{"Accept": {"application/jsonl", "application/x-ndjson;q=0.9", "application/json;q=0.5"}}
	res, err := c.do(ctx, http.MethodGet, "/events", q, h)
	if err != nil {
		return nil, err
	}
	return &EventStream{ctx: ctx, body: res.Body, dec: json.NewDecoder(res.Body), host: c.host}, nil
}

// Next waits for the next event. It returns the cause of ctx once it ends,
// and an error when the stream breaks or the engine ends it.
func (s *EventStream) Next() (Event, error) {
	var e Event
	err := s.dec.Decode(&e)
	switch {
	case err == nil:
		return e, nil
	case s.ctx.Err() != nil:
		return Event{}, context.Cause(s.ctx)
	case errors.Is(err, io.EOF):
		return Event{}, fmt.Errorf("docker engine at %s ended the event stream", s.host)
	default:
		return Event{}, fmt.Errorf("docker engine at %s: event stream: %w", s.host, err)
	}
}

// Close ends the stream.
func (s *EventStream) Close() error {
	return s.body.Close()
}
