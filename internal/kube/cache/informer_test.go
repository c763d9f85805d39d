package cache_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/cache"
	"github.com/llmchaos/llmchaos/internal/kube/rest"
)

func pod(name, rv string) string {
	return fmt.Sprintf(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":%q,"namespace":"ns","resourceVersion":%q}}`, name, rv)
}

// recorder writes each handler call as a line: "add a 5 initial",
// "update a 5->11", "delete a (final state unknown)".
type recorder struct {
	mu     sync.Mutex
	events []string
	more   chan struct{}
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.events = append(r.events, s)
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
}

func (r *recorder) handler() cache.ResourceEventHandler {
	desc := func(o any) string { p := o.(*corev1.Pod); return p.Name + " " + p.ResourceVersion }
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(o any, initial bool) {
			s := "add " + desc(o)
			if initial {
				s += " initial"
			}
			r.add(s)
		},
		UpdateFunc: func(old, o any) { r.add("update " + desc(old) + "->" + o.(*corev1.Pod).ResourceVersion) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				r.add("delete " + d.Key + " (final state unknown)")
				return
			}
			r.add("delete " + desc(o))
		},
	}
}

// waitFor waits until n events came, or ctx ends.
func (r *recorder) waitFor(ctx context.Context, n int) []string {
	for {
		r.mu.Lock()
		got := slices.Clone(r.events)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-ctx.Done():
			return got
		case <-r.more:
		}
	}
}

// TestInformerListsAgainWhenTheWatchHistoryIsGone drives an informer
// against an API server (a real HTTP server) whose watch from the first
// list's version ends with 410 Gone, as a watch-cache that dropped it
// answers: once as an ERROR event in the stream, once as the watch
// request's own status. The informer lists again and tells its handler
// what changed across the gap: an update of the pod that stayed, an add
// of the new one (not of the initial list) and, for the pod gone in
// between, a delete with its final state unknown.
func TestInformerListsAgainWhenTheWatchHistoryIsGone(t *testing.T) {
	for _, mode := range []string{"error event", "watch status"} {
		t.Run(mode, func(t *testing.T) {
			var (
				mu      sync.Mutex
				lists   int
				watches []string
				resumed = make(chan struct{}) // closed once the watch from the second list began
				once    sync.Once
			)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/api/v1/namespaces/ns/pods" {
					http.NotFound(w, r)
					return
				}
				q := r.URL.Query()
				w.Header().Set("Content-Type", "application/json")
				mu.Lock()
				if q.Get("watch") != "true" {
					lists++
					n := lists
					mu.Unlock()
					if q.Get("labelSelector") != "app=sim" {
						http.Error(w, "selector "+q.Get("labelSelector"), http.StatusBadRequest)
						return
					}
					if n == 1 {
						fmt.Fprintf(w, `{"kind":"PodList","metadata":{"resourceVersion":"10"},"items":[%s,%s]}`, pod("a", "5"), pod("b", "6"))
					} else {
						fmt.Fprintf(w, `{"kind":"PodList","metadata":{"resourceVersion":"20"},"items":[%s,%s]}`, pod("b", "15"), pod("c", "16"))
					}
					return
				}
				// No watch-list stream (sendInitialEvents): the test control
				// plane's etcd 3.4 cannot serve one, and a client that asks
				// falls back only after a long wait.
				watches = append(watches, q.Get("resourceVersion")+" bookmarks="+q.Get("allowWatchBookmarks")+
					" initial events="+q.Get("sendInitialEvents"))
				mu.Unlock()
				switch rv := q.Get("resourceVersion"); {
				case rv == "10" && mode == "watch status":
					w.WriteHeader(http.StatusGone)
					fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 10 (12)","reason":"Expired","code":410}`)
				case rv == "10":
					fmt.Fprintf(w, `{"type":"MODIFIED","object":%s}`+"\n", pod("a", "11"))
					fmt.Fprint(w, `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 11 (12)","reason":"Expired","code":410}}`+"\n")
				default:
					once.Do(func() { close(resumed) })
					fmt.Fprintf(w, `{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"21"}}}`+"\n")
					w.(http.Flusher).Flush()
					<-r.Context().Done() // open until the informer stops
				}
			}))
			defer srv.Close()
			client, err := kube.NewClientset(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{more: make(chan struct{}, 1)}
			inf := cache.NewInformer(client.CoreV1().Pods("ns").ListWatch(func(o *metav1.ListOptions) { o.LabelSelector = "app=sim" }), rec.handler())
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			runCtx, stop := context.WithCancel(ctx)
			wg.Go(func() { inf.Run(runCtx) })
			want := []string{"add a 5 initial", "add b 6 initial"}
			if mode == "error event" {
				want = append(want, "update a 5->11")
			}
			want = append(want, "update b 6->15", "add c 16", "delete ns/a (final state unknown)")
			got := rec.waitFor(ctx, len(want))
			select {
			case <-resumed:
			case <-ctx.Done():
				t.Error("no watch from the second list's version")
			}
			stop()
			wg.Wait()
			if !slices.Equal(got, want) {
				t.Errorf("handler calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !inf.HasSynced() {
				t.Error("HasSynced is false after the first list")
			}
			keys := []string{}
			for _, o := range inf.List() {
				keys = append(keys, cache.Key(o))
			}
			if !slices.Equal(keys, []string{"ns/b", "ns/c"}) {
				t.Errorf("store holds %v, want ns/b ns/c", keys)
			}
			mu.Lock()
			defer mu.Unlock()
			if lists != 2 || len(watches) < 2 || watches[0] != "10 bookmarks=true initial events=" || watches[1] != "20 bookmarks=true initial events=" {
				t.Errorf("%d lists, watches from %v; want 2 lists and watches from 10 then 20, with bookmarks and no watch-list stream", lists, watches)
			}
		})
	}
}

// TestInformerBacksOffAWatchClosedAtOnce: a server (or a proxy before it)
// that ends each watch stream at once, with no event, gets the next watch
// only after the backoff, doubling, on the server's own clock, never a
// loop of watches.
func TestInformerBacksOffAWatchClosedAtOnce(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		watches []time.Time
		third   = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "true" {
			fmt.Fprintf(w, `{"kind":"PodList","metadata":{"resourceVersion":"10"},"items":[%s]}`, pod("a", "5"))
			return
		}
		mu.Lock()
		watches = append(watches, time.Now())
		if len(watches) == 3 {
			close(third)
		}
		mu.Unlock()
		// The stream ends here: 200 and no event.
	}))
	defer srv.Close()
	client, err := kube.NewClientset(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	inf := cache.NewInformer(client.CoreV1().Pods("ns").ListWatch(nil), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	runCtx, stop := context.WithCancel(ctx)
	wg.Go(func() { inf.Run(runCtx) })
	select {
	case <-third:
	case <-ctx.Done():
		t.Fatal("fewer than three watches in 30 s")
	}
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	// The backoff is 0.8 s, then 1.6 s, each plus up to half as jitter.
	for i, least := range []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond} {
		if gap := watches[i+1].Sub(watches[i]); gap < least {
			t.Errorf("watch %d came %v after watch %d, want at least %v (backoff)", i+2, gap, i+1, least)
		}
	}
}
