package kube

import (
	"context"
	"fmt"
	"sync"

	"github.com/llmchaos/llmchaos/internal/kube/cache"
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

// runInformer runs informer in the background; stop ends it and waits
// for it.
func runInformer(ctx context.Context, informer *cache.Informer) (stop func()) {
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { informer.Run(runCtx) })
	return func() {
		cancel()
		wg.Wait()
	}
}

// watchLoop runs an informer over lw and calls changed with a snapshot of
// its store (sorted by namespace/name; the objects are shared with the
// informer and must not be modified) after the first list and after every
// change, until changed returns true or ctx ends. synced, when not nil, is
// called once, after the first list and before the first call of changed.
// Calls of changed come from one goroutine, in order; a change that comes
// while changed runs is seen by the next call.
func watchLoop[T any](ctx context.Context, lw cache.ListerWatcher, synced func(), changed func([]T) bool) watchOutcome {
	notify := make(chan struct{}, 1)
	poke := func() {
		select {
		case notify <- struct{}{}:
		default: // a call is pending already; it will see this change too
		}
	}
	informer := cache.NewInformer(lw, cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	})
	stop := runInformer(ctx, informer)
	defer stop()
	select {
	case <-ctx.Done():
		return watchOutcome{lastErr: informer.LastError()}
	case <-informer.Synced():
	}
	if synced != nil {
		synced()
	}
	for {
		if changed(snapshot[T](informer)) {
			return watchOutcome{done: true, synced: true}
		}
		select {
		case <-ctx.Done():
			return watchOutcome{synced: true, lastErr: informer.LastError()}
		case <-notify:
		}
	}
}

// snapshot returns the informer's objects, sorted by key.
func snapshot[T any](informer *cache.Informer) []T {
	objs := informer.List()
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// Inform runs an informer over lw until ctx ends and passes every change
// to h, whose calls come from one goroutine, in order (the adds of the
// first list have isInInitialList set). synced, when not nil, is called
// once the first list has been handed to h. Inform returns nil when ctx
// ends after the first list, and an error naming the last failure of the
// list when ctx ends before it.
func Inform(ctx context.Context, lw cache.ListerWatcher, synced func(), h cache.ResourceEventHandler) error {
	informer := cache.NewInformer(lw, h)
	stop := runInformer(ctx, informer)
	defer stop()
	select {
	case <-ctx.Done():
		if err := informer.LastError(); err != nil {
			return fmt.Errorf("no list: %w (last error: %w)", context.Cause(ctx), err)
		}
		return fmt.Errorf("no list: %w", context.Cause(ctx))
	case <-informer.Synced():
	}
	if synced != nil {
		synced()
	}
	<-ctx.Done()
	return nil
}
