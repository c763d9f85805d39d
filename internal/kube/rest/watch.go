package rest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/watch"
)

// Watch sends r (a GET with watch=true) and returns the watch of its
// answer: each event's object decoded into a new value of newObj, an
// Error event's into a *metav1.Status. The watch ends when the server
// ends the stream, the stream breaks, ctx ends or Stop is called.
func (c *Client) Watch(ctx context.Context, r Request, newObj func() any) (watch.Interface, error) {
	ctx, cancel := context.WithCancel(ctx)
	body, err := c.Stream(ctx, r)
	if err != nil {
		cancel()
		return nil, err
	}
	w := &streamWatch{ch: make(chan watch.Event), cancel: cancel, body: body, done: make(chan struct{})}
	go w.read(ctx, newObj)
	return w, nil
}

type streamWatch struct {
	ch     chan watch.Event
	cancel context.CancelFunc
	body   io.ReadCloser
	done   chan struct{}
	once   sync.Once
}

func (w *streamWatch) ResultChan() <-chan watch.Event { return w.ch }

func (w *streamWatch) Stop() {
	w.once.Do(func() {
		w.cancel()
		_ = w.body.Close()
	})
	<-w.done
}

func (w *streamWatch) read(ctx context.Context, newObj func() any) {
	defer close(w.done)
	defer close(w.ch)
	defer w.body.Close()
	dec := json.NewDecoder(w.body)
	for {
		var raw struct {
			Type   watch.EventType `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&raw); err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				w.send(ctx, watch.Event{Type: watch.Error, Object: &metav1.Status{
					Status: "Failure", Code: http.StatusInternalServerError,
					Reason: metav1.StatusReasonInternalError, Message: "watch stream: " + err.Error(),
				}})
			}
			return
		}
		var obj any
		if raw.Type == watch.Error {
			st := &metav1.Status{}
			if err := json.Unmarshal(raw.Object, st); err != nil {
				st = &metav1.Status{Status: "Failure", Message: "watch error event: " + err.Error()}
			}
			obj = st
		} else {
			obj = newObj()
			if err := json.Unmarshal(raw.Object, obj); err != nil {
				w.send(ctx, watch.Event{Type: watch.Error, Object: &metav1.Status{
					Status: "Failure", Code: http.StatusInternalServerError,
					Reason: metav1.StatusReasonInternalError, Message: "watch event " + string(raw.Type) + ": " + err.Error(),
				}})
				return
			}
		}
		if !w.send(ctx, watch.Event{Type: raw.Type, Object: obj}) {
			return
		}
	}
}

func (w *streamWatch) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.ch <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}
