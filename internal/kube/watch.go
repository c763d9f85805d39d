package kube

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// watchOutcome is how a watch loop ended.
type watchOutcome struct {
	// done: changed returned true.
	done bool
	// synced: the first list came in.
	synced bool
	// lastErr is the last error of a list or watch (a forbidden list, a
	// namespace that does not exist is no error: it lists nothing).
	lastErr error
}

// runInformer runs informer, whose handlers are added, until stop is
// called (stop waits for it to end); lastErr returns the last error of
// its lists and watches.
func runInformer(ctx context.Context, informer cache.SharedIndexInformer) (lastErr func() error, stop func()) {
	var (
		mu   sync.Mutex
		last error
	)
	_ = informer.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		mu.Lock()
		last = err
		mu.Unlock()
	})
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { informer.RunWithContext(runCtx) })
	return func() error {
			mu.Lock()
			defer mu.Unlock()
			return last
		}, func() {
			cancel()
			wg.Wait()
		}
}

// watchLoop runs an informer over lw and calls changed with a snapshot of
// its store (copies, sorted by namespace/name) after the first list and
// after every change, until changed returns true or ctx ends. synced, when
// not nil, is called once, after the first list and before the first call
// of changed. Calls of changed come from one goroutine, in order; a change
// that comes while changed runs is seen by the next call.
func watchLoop[T runtime.Object](ctx context.Context, lw cache.ListerWatcher, example T, synced func(), changed func([]T) bool) watchOutcome {
	informer := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
	notify := make(chan struct{}, 1)
	poke := func() {
		select {
		case notify <- struct{}{}:
		default: // a call is pending already; it will see this change too
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}); err != nil {
		return watchOutcome{lastErr: err}
	}
	last, stop := runInformer(ctx, informer)
	defer stop()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return watchOutcome{lastErr: last()}
	}
	if synced != nil {
		synced()
	}
	for {
		if changed(snapshot[T](informer.GetStore())) {
			return watchOutcome{done: true, synced: true}
		}
		select {
		case <-ctx.Done():
			return watchOutcome{synced: true, lastErr: last()}
		case <-notify:
		}
	}
}

// snapshot copies the store's objects, sorted by key.
func snapshot[T runtime.Object](store cache.Store) []T {
	keys := store.ListKeys()
	slices.Sort(keys)
	objs := make([]T, 0, len(keys))
	for _, k := range keys {
		obj, ok, err := store.GetByKey(k)
		if err != nil || !ok {
			continue // deleted since ListKeys; the next change calls again
		}
		objs = append(objs, obj.(T).DeepCopyObject().(T))
	}
	return objs
}

// Inform runs an informer over lw until ctx ends and passes every change
// to h, whose calls come from one goroutine, in order (the adds of the
// first list have isInInitialList set). synced, when not nil, is called
// once the first list has been handed to h. Inform returns nil when ctx
// ends after the first list, and an error naming the last failure of the
// list when ctx ends before it.
func Inform(ctx context.Context, lw cache.ListerWatcher, example runtime.Object, synced func(), h cache.ResourceEventHandler) error {
	informer := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
	reg, err := informer.AddEventHandler(h)
	if err != nil {
		return err
	}
	last, stop := runInformer(ctx, informer)
	defer stop()
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		if err := last(); err != nil {
			return fmt.Errorf("no list: %w (last error: %w)", context.Cause(ctx), err)
		}
		return fmt.Errorf("no list: %w", context.Cause(ctx))
	}
	if synced != nil {
		synced()
	}
	<-ctx.Done()
	return nil
}
