package replica

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/cache"
)

// Event kinds of the kubernetes driver's pod watch, besides start, exit,
// restart, healthy, unhealthy and oom. A Kubernetes Event object is
// reported with its reason as the kind (Scheduled, Killing, Pulled,
// Started, BackOff, SuccessfulCreate, ...).
const (
	// EventCreated: a pod of the selector was created (a replacement).
	EventCreated EventKind = "created"
	// EventScheduled: a pod was bound to a node.
	EventScheduled EventKind = "scheduled"
	// EventTerminating: a pod is being deleted (its grace period runs).
	EventTerminating EventKind = "terminating"
	// EventDeleted: a pod is gone from the API.
	EventDeleted EventKind = "deleted"
	// EventCrashLoop: a container of a pod waits in CrashLoopBackOff.
	EventCrashLoop EventKind = "crashloop"
)

// Watch reports what the target's pods do until ctx ends: their status
// changes (created, scheduled, start when Running, healthy and unhealthy
// as their Ready condition turns, restart of a container with its last
// state, oom for a container OOMKilled, crashloop, terminating, deleted,
// exit when a pod ends), at the moment the watch sees them, and the
// Kubernetes Events of those pods and of their controllers, at the
// Event's own time, with its reason as the kind. It calls ready once both
// watches have their first list; what happened before is not reported.
func (k *Kubernetes) Watch(ctx context.Context, ready func(), emit func(Event)) error {
	cl, ns, err := k.connect()
	if err != nil {
		return err
	}
	w := &podWatch{emit: emit, pods: map[string]podState{}, owners: map[string]bool{}, uids: map[string]bool{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg     sync.WaitGroup
		synced sync.WaitGroup
		errs   [2]error
	)
	synced.Add(2)
	wg.Go(func() {
		errs[0] = kube.Inform(ctx, kube.PodsListWatch(cl.Client, ns, k.t.Selector), synced.Done, w.podHandler())
		if errs[0] != nil {
			cancel()
		}
	})
	wg.Go(func() {
		lw := cl.Client.CoreV1().Events(ns).ListWatch(nil)
		errs[1] = kube.Inform(ctx, lw, synced.Done, w.eventHandler())
		if errs[1] != nil {
			cancel()
		}
	})
	bothSynced := make(chan struct{})
	go func() {
		synced.Wait()
		close(bothSynced)
	}()
	select {
	case <-bothSynced:
		if ready != nil {
			ready()
		}
	case <-ctx.Done():
	}
	wg.Wait()
	switch {
	case errs[0] != nil:
		return fmt.Errorf("kubernetes driver: watch pods %q in %s: %w", k.t.Selector, ns, errs[0])
	case errs[1] != nil:
		return fmt.Errorf("kubernetes driver: watch events in %s: %w", ns, errs[1])
	}
	return nil
}

// podState is what the watch remembers of a pod to tell what changed.
type podState struct {
	phase     corev1.PodPhase
	node      string
	ready     bool
	deleting  bool
	restarts  map[string]int32
	crashloop map[string]bool
}

func stateOf(p *corev1.Pod) podState {
	s := podState{phase: p.Status.Phase, node: p.Spec.NodeName, ready: kube.PodReady(p), deleting: p.DeletionTimestamp != nil,
		restarts: map[string]int32{}, crashloop: map[string]bool{}}
	for _, c := range p.Status.ContainerStatuses {
		s.restarts[c.Name] = c.RestartCount
		s.crashloop[c.Name] = c.State.Waiting != nil && c.State.Waiting.Reason == "CrashLoopBackOff"
	}
	return s
}

// podWatch turns pod changes and Event objects into Events. Its handlers
// run on two goroutines (one per informer); mu serialises them and emit.
type podWatch struct {
	mu   sync.Mutex
	emit func(Event)
	pods map[string]podState
	// owners are the controllers (kind/name) of the pods seen, and uids
	// the pods' uids: the Events the watch reports are theirs.
	owners map[string]bool
	uids   map[string]bool
}

func (w *podWatch) podHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			w.note(p)
			if initial {
				w.pods[p.Name] = stateOf(p)
				return
			}
			detail := ""
			if o := metav1.GetControllerOf(p); o != nil {
				detail = "by " + o.Kind + " " + o.Name
			}
			w.send(p, EventCreated, detail, "")
			w.changed(p, podState{restarts: map[string]int32{}, crashloop: map[string]bool{}})
		},
		UpdateFunc: func(_, obj any) {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			w.note(p)
			w.changed(p, w.pods[p.Name])
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			delete(w.pods, p.Name)
			w.send(p, EventDeleted, "uid "+string(p.UID), "")
		},
	}
}

// note remembers a pod's uid and controller.
func (w *podWatch) note(p *corev1.Pod) {
	w.uids[string(p.UID)] = true
	if o := metav1.GetControllerOf(p); o != nil {
		w.owners[o.Kind+"/"+o.Name] = true
	}
}

// changed reports how pod p differs from what was seen of it before.
func (w *podWatch) changed(p *corev1.Pod, before podState) {
	now := stateOf(p)
	w.pods[p.Name] = now
	if now.node != "" && before.node == "" {
		w.send(p, EventScheduled, "node "+now.node, "")
	}
	if now.phase != before.phase {
		switch now.phase {
		case corev1.PodRunning:
			w.send(p, EventStart, fmt.Sprintf("Running on %s, ip %s", p.Spec.NodeName, p.Status.PodIP), "")
		case corev1.PodFailed, corev1.PodSucceeded:
			detail := string(now.phase)
			if p.Status.Reason != "" {
				detail += ": " + p.Status.Reason
			}
			w.send(p, EventExit, detail, "")
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.RestartCount > before.restarts[c.Name] {
			detail := fmt.Sprintf("container %s, restart %d", c.Name, c.RestartCount)
			oom := false
			if t := c.LastTerminationState.Terminated; t != nil {
				detail += fmt.Sprintf(", last exit code %d", t.ExitCode)
				if t.Reason != "" {
					detail += " (" + t.Reason + ")"
				}
				oom = t.Reason == "OOMKilled"
			}
			n := fmt.Sprintf("%s #%d", c.Name, c.RestartCount)
			w.send(p, EventRestart, detail, n)
			if oom {
				w.send(p, EventOOM, "container "+c.Name+" OOMKilled", n)
			}
		} else if t := c.State.Terminated; t != nil && t.Reason == "OOMKilled" && before.phase == corev1.PodRunning && now.phase != corev1.PodRunning {
			w.send(p, EventOOM, "container "+c.Name+" OOMKilled", "")
		}
		if now.crashloop[c.Name] && !before.crashloop[c.Name] {
			w.send(p, EventCrashLoop, "container "+c.Name+": "+c.State.Waiting.Message, "")
		}
	}
	switch {
	case now.ready && !before.ready:
		w.send(p, EventHealthy, "Ready", "")
	case !now.ready && before.ready && !now.deleting:
		w.send(p, EventUnhealthy, "not Ready", "")
	}
	if now.deleting && !before.deleting {
		detail := "deletion requested"
		if g := p.DeletionGracePeriodSeconds; g != nil {
			detail += fmt.Sprintf(", grace %ds", *g)
		}
		w.send(p, EventTerminating, detail, "")
	}
}

// send reports kind of pod p, at the moment the watch sees it; occurrence
// names it exactly when the pod's status does (a container's restart count).
func (w *podWatch) send(p *corev1.Pod, kind EventKind, detail, occurrence string) {
	w.emit(Event{At: time.Now(), Replica: p.Name, Kind: kind, Detail: detail, Object: "pod " + string(p.UID), Occurrence: occurrence})
}

func (w *podWatch) eventHandler() cache.ResourceEventHandler {
	counts := map[string]int32{}
	report := func(ev *corev1.Event, initial bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		key := string(ev.UID)
		n := eventCount(ev)
		prev, seen := counts[key]
		counts[key] = n
		if initial || (seen && n <= prev) || !w.concerns(ev) {
			return
		}
		detail := ev.InvolvedObject.Kind + ": " + ev.Message
		if n > 1 {
			detail += fmt.Sprintf(" (×%d)", n)
		}
		if ev.Type == corev1.EventTypeWarning {
			detail = "Warning " + detail
		}
		// The API's times have one-second resolution (an Event of 12:00:00.9
		// reads 12:00:00): placed there it could precede its cause on the
		// run's clock. It is placed when the watch saw it, its own time kept.
		o := ev.InvolvedObject
		w.emit(Event{At: time.Now(), SourceTime: eventTime(ev), Replica: o.Name, Kind: EventKind(ev.Reason), Detail: detail,
			Object: strings.ToLower(o.Kind) + " " + string(o.UID), Occurrence: "event " + string(ev.UID) + fmt.Sprintf(" #%d", n)})
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if ev, ok := obj.(*corev1.Event); ok {
				report(ev, initial)
			}
		},
		UpdateFunc: func(_, obj any) {
			if ev, ok := obj.(*corev1.Event); ok {
				report(ev, false)
			}
		},
	}
}

// concerns reports whether ev is about a pod of the target or one of their
// controllers: a pod seen, a pod named after a controller seen (a
// replacement the pod watch has not seen yet), or the controller itself,
// or the Deployment of a ReplicaSet seen.
func (w *podWatch) concerns(ev *corev1.Event) bool {
	o := ev.InvolvedObject
	switch o.Kind {
	case "Pod":
		if w.uids[string(o.UID)] {
			return true
		}
		for owner := range w.owners {
			_, name, _ := strings.Cut(owner, "/")
			if strings.HasPrefix(o.Name, name+"-") {
				return true
			}
		}
		return false
	case "Deployment":
		for owner := range w.owners {
			kind, name, _ := strings.Cut(owner, "/")
			if kind == "ReplicaSet" && strings.HasPrefix(name, o.Name+"-") {
				return true
			}
		}
		return false
	}
	return w.owners[o.Kind+"/"+o.Name]
}

// eventCount is how many times ev was seen.
func eventCount(ev *corev1.Event) int32 {
	if ev.Series != nil && ev.Series.Count > 0 {
		return ev.Series.Count
	}
	return max(ev.Count, 1)
}

// eventTime is when ev happened last.
func eventTime(ev *corev1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.FirstTimestamp.IsZero():
		return ev.FirstTimestamp.Time
	}
	return ev.CreationTimestamp.Time
}
