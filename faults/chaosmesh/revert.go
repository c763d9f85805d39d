package chaosmesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/schema"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
)

// KindObject is the RevertSpec kind of a Chaos Mesh object a fault
// created: its data is an ObjectRef, and reverting it deletes the object.
const KindObject = "chaosmesh.object"

// ObjectRef names one Chaos Mesh object and the cluster that holds it: all
// a revert needs after a crash.
type ObjectRef struct {
	kube.Access `json:",inline"`
	// Kind and Resource are the object's kind and plural resource.
	Kind     string `json:"kind"`
	Resource string `json:"resource"`
	// Namespace and Name name the object.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// String names the object as kubectl does: networkchaos/NAME in NS.
func (r ObjectRef) String() string {
	return fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name)
}

func (r ObjectRef) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: Version, Resource: r.Resource}
}

// spec returns the journal's record of r.
func (r ObjectRef) spec() faults.RevertSpec {
	data, _ := json.Marshal(r) // strings only: cannot fail
	return faults.RevertSpec{Kind: KindObject, Data: data}
}

// delete deletes the object (a vanished one counts as deleted) and waits
// until it is gone, that is until Chaos Mesh has recovered the pods and
// removed its finalizer.
func (r ObjectRef) delete(ctx context.Context, cl *kube.Cluster) error {
	res := cl.Dynamic.Resource(r.gvr()).Namespace(r.Namespace)
	err := res.Delete(ctx, r.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", r, err)
	}
	if err := kube.WaitGone(ctx, res, r.Name); err != nil {
		return fmt.Errorf("delete %s: Chaos Mesh has not recovered it yet: %w", r, err)
	}
	return nil
}

// Reverters returns the reverter of KindObject (a new map on every call).
func Reverters() map[string]faults.Reverter {
	return map[string]faults.Reverter{KindObject: revertObject}
}

// revertObject deletes the object a KindObject spec names.
func revertObject(ctx context.Context, data json.RawMessage) error {
	var r ObjectRef
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("%s spec: %w", KindObject, err)
	}
	if r.Resource == "" || r.Namespace == "" || r.Name == "" {
		return errors.New(KindObject + " spec: resource, namespace and name are required")
	}
	cl, err := r.Access.Connect()
	if err != nil {
		return err
	}
	ctx, cancel := withDefaultTimeout(ctx, objectTimeout)
	defer cancel()
	return r.delete(ctx, cl)
}
