package gpupod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/schema"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
)

// KindPod is the RevertSpec kind of a balloon pod: its data is a PodRef,
// and reverting it deletes the pod and waits until it is gone (its
// process ended, its GPU memory freed).
const KindPod = "gpupod.balloon"

// deleteTimeout bounds an Undo or a Reverter given a context without a
// deadline: the balloon's grace period and a margin.
const deleteTimeout = 2 * time.Minute

// PodRef names one balloon pod and the cluster that runs it.
type PodRef struct {
	kube.Access `json:",inline"`
	// Namespace and Name name the pod.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// String names the pod: pod NS/NAME.
func (r PodRef) String() string { return "balloon pod " + r.Namespace + "/" + r.Name }

func (r PodRef) spec() faults.RevertSpec {
	data, _ := json.Marshal(r) // strings only: cannot fail
	return faults.RevertSpec{Kind: KindPod, Data: data}
}

// delete deletes the pod (a vanished one counts as deleted) and waits
// until it is gone.
func (r PodRef) delete(ctx context.Context, cl *kube.Cluster) error {
	pods := cl.Client.CoreV1().Pods(r.Namespace)
	err := pods.Delete(ctx, r.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", r, err)
	}
	podsGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	if err := kube.WaitGone(ctx, cl.Dynamic.Resource(podsGVR).Namespace(r.Namespace), r.Name); err != nil {
		return fmt.Errorf("delete %s: %w", r, err)
	}
	return nil
}

// Reverters returns the reverter of KindPod (a new map on every call).
func Reverters() map[string]faults.Reverter {
	return map[string]faults.Reverter{KindPod: revertPod}
}

func revertPod(ctx context.Context, data json.RawMessage) error {
	var r PodRef
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("%s spec: %w", KindPod, err)
	}
	if r.Namespace == "" || r.Name == "" {
		return errors.New(KindPod + " spec: namespace and name are required")
	}
	cl, err := r.Access.Connect()
	if err != nil {
		return err
	}
	ctx, cancel := withDefaultTimeout(ctx, deleteTimeout)
	defer cancel()
	return r.delete(ctx, cl)
}

func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
