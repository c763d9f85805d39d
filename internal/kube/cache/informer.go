// Package cache keeps a live copy of the objects a list selects: an
// informer that lists, then watches from the list's resource version,
// lists again when the watch's history is gone (410) or it fails, and
// tells handlers of every add, update and delete, as client-go's
// tools/cache does for the uses llmchaos has.
package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/watch"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
)

// Object is what the informer needs of an object: its key and version.
type Object interface {
	GetNamespace() string
	GetName() string
	GetResourceVersion() string
}

// ListerWatcher lists and watches one kind of object.
type ListerWatcher interface {
	// List returns the objects and the list's resource version.
	List(ctx context.Context, opts metav1.ListOptions) ([]Object, string, error)
	// Watch watches from opts.ResourceVersion.
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ListWatch is a ListerWatcher of two functions.
type ListWatch struct {
	ListFunc  func(ctx context.Context, opts metav1.ListOptions) ([]Object, string, error)
	WatchFunc func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// List calls ListFunc.
func (lw ListWatch) List(ctx context.Context, opts metav1.ListOptions) ([]Object, string, error) {
	return lw.ListFunc(ctx, opts)
}

// Watch calls WatchFunc.
func (lw ListWatch) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchFunc(ctx, opts)
}

// ResourceEventHandler is told of the changes an informer sees. Its calls
// come from the informer's goroutine, one at a time, in order.
type ResourceEventHandler interface {
	OnAdd(obj any, isInInitialList bool)
	OnUpdate(oldObj, newObj any)
	// OnDelete gets the object last seen, or a DeletedFinalStateUnknown
	// when the object went away while the watch was broken.
	OnDelete(obj any)
}

// ResourceEventHandlerFuncs is a ResourceEventHandler of functions (each
// may be nil).
type ResourceEventHandlerFuncs struct {
	AddFunc    func(obj any)
	UpdateFunc func(oldObj, newObj any)
	DeleteFunc func(obj any)
}

// OnAdd calls AddFunc.
func (f ResourceEventHandlerFuncs) OnAdd(obj any, _ bool) {
	if f.AddFunc != nil {
		f.AddFunc(obj)
	}
}

// OnUpdate calls UpdateFunc.
func (f ResourceEventHandlerFuncs) OnUpdate(oldObj, newObj any) {
	if f.UpdateFunc != nil {
		f.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc.
func (f ResourceEventHandlerFuncs) OnDelete(obj any) {
	if f.DeleteFunc != nil {
		f.DeleteFunc(obj)
	}
}

// ResourceEventHandlerDetailedFuncs is ResourceEventHandlerFuncs whose
// AddFunc is told whether the add is of the first list.
type ResourceEventHandlerDetailedFuncs struct {
	AddFunc    func(obj any, isInInitialList bool)
	UpdateFunc func(oldObj, newObj any)
	DeleteFunc func(obj any)
}

// OnAdd calls AddFunc.
func (f ResourceEventHandlerDetailedFuncs) OnAdd(obj any, isInInitialList bool) {
	if f.AddFunc != nil {
		f.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc.
func (f ResourceEventHandlerDetailedFuncs) OnUpdate(oldObj, newObj any) {
	if f.UpdateFunc != nil {
		f.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc.
func (f ResourceEventHandlerDetailedFuncs) OnDelete(obj any) {
	if f.DeleteFunc != nil {
		f.DeleteFunc(obj)
	}
}

// DeletedFinalStateUnknown is what OnDelete gets for an object that was
// gone from a new list: it was deleted while the watch was broken, and
// Obj is its last state seen, which may be stale.
type DeletedFinalStateUnknown struct {
	Key string
	Obj any
}

// Key returns the key of o: namespace/name, or name for cluster-scoped
// objects.
func Key(o Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// Backoff bounds: the first wait after a failed list or watch, and the
// longest one (as client-go's reflector).
const (
	backoffMin = 800 * time.Millisecond
	backoffMax = 30 * time.Second
)

// Informer keeps the objects of a ListerWatcher and tells its handler of
// each change. Run it once; HasSynced, List and LastError are safe from
// any goroutine.
type Informer struct {
	lw      ListerWatcher
	handler ResourceEventHandler

	mu      sync.Mutex
	store   map[string]Object
	lastErr error
	synced  atomic.Bool
	syncCh  chan struct{}
	// WatchErrors, when set before Run, is told of each failed list or
	// watch.
	WatchErrors func(error)
}

// NewInformer returns the informer of lw that tells h (nil: nobody).
func NewInformer(lw ListerWatcher, h ResourceEventHandler) *Informer {
	if h == nil {
		h = ResourceEventHandlerFuncs{}
	}
	return &Informer{lw: lw, handler: h, store: map[string]Object{}, syncCh: make(chan struct{})}
}

// HasSynced reports whether the first list has been handed to the handler.
func (i *Informer) HasSynced() bool { return i.synced.Load() }

// Synced returns a channel closed once the first list has been handed to
// the handler.
func (i *Informer) Synced() <-chan struct{} { return i.syncCh }

// LastError returns the last error of a list or watch, nil when none failed.
func (i *Informer) LastError() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.lastErr
}

// List returns the objects, sorted by key.
func (i *Informer) List() []Object {
	i.mu.Lock()
	defer i.mu.Unlock()
	keys := make([]string, 0, len(i.store))
	for k := range i.store {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]Object, len(keys))
	for n, k := range keys {
		out[n] = i.store[k]
	}
	return out
}

func (i *Informer) fail(err error) {
	i.mu.Lock()
	i.lastErr = err
	i.mu.Unlock()
	if i.WatchErrors != nil {
		i.WatchErrors(err)
	}
}

// errRelist ends a watch whose history is gone: list again at once.
var errRelist = errors.New("relist")

// Run lists and watches until ctx ends.
func (i *Informer) Run(ctx context.Context) {
	backoff := backoffMin
	for ctx.Err() == nil {
		items, rv, err := i.lw.List(ctx, metav1.ListOptions{})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			i.fail(fmt.Errorf("list: %w", err))
			if !sleep(ctx, &backoff) {
				return
			}
			continue
		}
		i.replace(items)
		backoff = backoffMin
		for ctx.Err() == nil {
			next, err := i.watch(ctx, rv)
			if errors.Is(err, errRelist) {
				break
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				i.fail(err)
				if !sleep(ctx, &backoff) {
					return
				}
				break // list again: changes may have been missed while the watch failed
			}
			if next == rv {
				// The watch ended without an event or a bookmark (a proxy
				// or load balancer closing the stream at once): watch
				// again after the backoff, not in a loop that hammers the
				// API server, as client-go's reflector does for a short
				// watch.
				if !sleep(ctx, &backoff) {
					return
				}
				continue
			}
			backoff = backoffMin
			rv = next
		}
	}
}

// watch watches from rv until the watch ends, and returns the resource
// version to go on from; errRelist when the history from rv is gone.
func (i *Informer) watch(ctx context.Context, rv string) (string, error) {
	timeout := int64((5*time.Minute + rand.N(5*time.Minute)).Seconds()) //nolint:gosec // spreading watches, not security
	w, err := i.lw.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	if err != nil {
		if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
			return rv, errRelist
		}
		return rv, fmt.Errorf("watch: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return rv, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv, nil
			}
			switch ev.Type {
			case watch.Error:
				st, _ := ev.Object.(*metav1.Status)
				if st == nil {
					return rv, errors.New("watch: an error event without a status")
				}
				err := apierrors.FromStatus(*st)
				if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
					return rv, errRelist
				}
				return rv, fmt.Errorf("watch: %w", err)
			case watch.Bookmark:
				if o, ok := ev.Object.(Object); ok {
					rv = o.GetResourceVersion()
				}
			case watch.Added, watch.Modified, watch.Deleted:
				o, ok := ev.Object.(Object)
				if !ok {
					return rv, fmt.Errorf("watch: event %s of a %T, not an object", ev.Type, ev.Object)
				}
				rv = o.GetResourceVersion()
				i.apply(ev.Type, o)
			}
		}
	}
}

func (i *Informer) apply(t watch.EventType, o Object) {
	k := Key(o)
	i.mu.Lock()
	old, had := i.store[k]
	if t == watch.Deleted {
		delete(i.store, k)
	} else {
		i.store[k] = o
	}
	i.mu.Unlock()
	switch {
	case t == watch.Deleted:
		i.handler.OnDelete(o)
	case had:
		i.handler.OnUpdate(old, o)
	default:
		i.handler.OnAdd(o, false)
	}
}

// replace makes the store hold items, telling the handler of adds,
// updates and, for objects gone from the list, deletes.
func (i *Informer) replace(items []Object) {
	initial := !i.synced.Load()
	i.mu.Lock()
	old := i.store
	i.store = make(map[string]Object, len(items))
	for _, o := range items {
		i.store[Key(o)] = o
	}
	i.mu.Unlock()
	for _, o := range items {
		if prev, ok := old[Key(o)]; ok {
			i.handler.OnUpdate(prev, o)
		} else {
			i.handler.OnAdd(o, initial)
		}
	}
	gone := make([]string, 0)
	for k := range old {
		if _, ok := i.store[k]; !ok {
			gone = append(gone, k)
		}
	}
	slices.Sort(gone)
	for _, k := range gone {
		i.handler.OnDelete(DeletedFinalStateUnknown{Key: k, Obj: old[k]})
	}
	if initial {
		i.synced.Store(true)
		close(i.syncCh)
	}
}

// sleep waits *d (with jitter) and doubles it up to backoffMax; false when
// ctx ended first.
func sleep(ctx context.Context, d *time.Duration) bool {
	wait := *d + rand.N(*d/2+1) //nolint:gosec // jitter
	*d = min(2**d, backoffMax)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
