package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// WaitPods watches the pods of t (as Pods lists them: llmchaos's own left
// out) until cond holds for them (copies, sorted by name) and returns nil,
// or returns ctx's error when it ends first. cond sees the pods after the
// first list and after every change.
func WaitPods(ctx context.Context, client kubernetes.Interface, t PodTarget, cond func([]corev1.Pod) bool) error {
	return WaitSelectedPods(ctx, client, t.Namespace, t.Selector, func(pods []corev1.Pod) bool {
		return cond(slices.DeleteFunc(pods, func(p corev1.Pod) bool { return p.Labels[LabelManagedBy] == ManagedBy }))
	})
}

// WaitSelectedPods is WaitPods for the pods of namespace ns that the label
// selector matches, llmchaos's own pods included.
func WaitSelectedPods(ctx context.Context, client kubernetes.Interface, ns, selector string, cond func([]corev1.Pod) bool) error {
	t := PodTarget{Namespace: ns, Selector: selector}
	lw := cache.NewFilteredListWatchFromClient(client.CoreV1().RESTClient(), "pods", ns,
		func(o *metav1.ListOptions) { o.LabelSelector = selector })
	informer := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default: // a check is pending already; it sees this change too
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}); err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { informer.RunWithContext(runCtx) })
	defer func() {
		stop()
		wg.Wait()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("watch %s: no list: %w", t, context.Cause(ctx))
	}
	for {
		var pods []corev1.Pod
		for _, o := range informer.GetStore().List() {
			pods = append(pods, *o.(*corev1.Pod).DeepCopy())
		}
		slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		if cond(pods) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("watch %s: %w", t, context.Cause(ctx))
		case <-changed:
		}
	}
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
