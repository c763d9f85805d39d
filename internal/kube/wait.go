package kube

import (
	"context"
	"fmt"

	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/fields"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/watch"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
	"github.com/llmchaos/llmchaos/internal/kube/cache"
	"github.com/llmchaos/llmchaos/internal/kube/dynamic"
)

// WaitList watches what lw lists until cond holds for it (copies, sorted
// by namespace/name; cond sees every change and must neither keep nor
// modify them) and
// returns it. When ctx ends first, the error says whether the first list
// came in, with the last error of the watch, if any, and the objects last
// seen are returned with it.
func WaitList[T any](ctx context.Context, lw cache.ListerWatcher, cond func([]T) bool) ([]T, error) {
	var last []T
	out := watchLoop(ctx, lw, nil, func(objs []T) bool {
		last = objs
		return cond(objs)
	})
	if out.done {
		return last, nil
	}
	err := context.Cause(ctx)
	if !out.synced {
		err = fmt.Errorf("no list before the deadline: %w", err)
	}
	if out.lastErr != nil {
		err = fmt.Errorf("%w (last error: %w)", err, out.lastErr)
	}
	return last, err
}

// WaitPods watches the pods of namespace ns that match selector ("" for
// all) until cond holds for them, as WaitList, and returns them (sorted by
// name); the error names the pods' selector and namespace.
func WaitPods(ctx context.Context, client *Clientset, ns, selector string, cond func([]*corev1.Pod) bool) ([]*corev1.Pod, error) {
	pods, err := WaitList(ctx, PodsListWatch(client, ns, selector), cond)
	if err != nil {
		return pods, fmt.Errorf("pods %q in %s: %w", selector, ns, err)
	}
	return pods, nil
}

// WaitGone waits until the object name of res is gone (its Get answers
// 404): deleted, its finalizers done. It returns ctx's error, saying what
// still holds the object, when ctx ends first.
func WaitGone(ctx context.Context, res dynamic.ResourceInterface, name string) error {
	for {
		obj, err := res.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", name, err)
		}
		w, err := res.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: obj.GetResourceVersion(),
		})
		if err != nil {
			return fmt.Errorf("watch %s: %w", name, err)
		}
		gone, err := untilDeleted(ctx, w)
		w.Stop()
		if gone {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s is still there (finalizers %v, deleting since %v): %w", name, obj.GetFinalizers(), obj.GetDeletionTimestamp(), err)
		}
		// The watch ended (a timeout of the server's): look again.
	}
}

// untilDeleted reads w until a Deleted event (true), the end of the watch
// (false, nil) or the end of ctx (false, its error).
func untilDeleted(ctx context.Context, w watch.Interface) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, context.Cause(ctx)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Deleted:
				return true, nil
			case watch.Error:
				return false, nil
			}
		}
	}
}
