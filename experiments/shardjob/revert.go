package shardjob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/batchv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
)

// KindJob is the RevertSpec kind of a shard Job a run created: its data
// is a JobRef, and reverting it deletes the Job and its pods, so that a
// run killed while its shards still send their load has them stopped by
// its guard or `llmchaos recover`.
const KindJob = "kubernetes.job"

// JournalType is the type of the journal entry of a shard Job (the
// workload key that makes one).
const JournalType = "workload.shards"

// journalName is the name of the journal entry of a shard Job.
const journalName = "load shards"

// DeleteTimeout bounds the deletion of a Job and the wait until it and
// its pods are gone, at the end of Run and in a revert given a context
// without a deadline: a running shard gets its grace period (30 s by
// default) to stop.
const DeleteTimeout = 2 * time.Minute

// JobRef names one shard Job and the cluster that runs it: all a revert
// needs after a crash.
type JobRef struct {
	kube.Access `json:",inline"`
	// Namespace and Name name the Job.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// String names the Job: job NS/NAME.
func (r JobRef) String() string { return "job " + r.Namespace + "/" + r.Name }

// Spec returns the journal's record of r.
func (r JobRef) Spec() faults.RevertSpec {
	data, _ := json.Marshal(r) // strings only: cannot fail
	return faults.RevertSpec{Kind: KindJob, Data: data}
}

// Delete deletes the Job in the foreground, its pods first (a vanished
// Job counts as deleted), and waits until it is gone: once it is, none of
// its pods runs any more, so none sends load. The error says how to
// delete the Job by hand.
func (r JobRef) Delete(ctx context.Context, cl *kube.Cluster) error {
	fg := metav1.DeletePropagationForeground
	err := cl.Client.BatchV1().Jobs(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{PropagationPolicy: &fg})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		jobs := cl.Dynamic.Resource(batchv1.SchemeGroupVersion.WithResource("jobs")).Namespace(r.Namespace)
		if err = kube.WaitGone(ctx, jobs, r.Name); err != nil {
			err = fmt.Errorf("its pods are not all gone: %w", err)
		}
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w (delete it by hand: kubectl -n %s delete job %s)", r, err, r.Namespace, r.Name)
	}
	return nil
}

// Reverters returns the reverter of KindJob (a new map on every call).
func Reverters() map[string]faults.Reverter {
	return map[string]faults.Reverter{KindJob: revertJob}
}

// revertJob deletes the Job a KindJob spec names.
func revertJob(ctx context.Context, data json.RawMessage) error {
	var r JobRef
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("%s spec: %w", KindJob, err)
	}
	if r.Namespace == "" || r.Name == "" {
		return errors.New(KindJob + " spec: namespace and name are required")
	}
	cl, err := r.Access.Connect()
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DeleteTimeout)
		defer cancel()
	}
	return r.Delete(ctx, cl)
}

// refused reports whether err, the error of a create, is the API
// server's answer that it created nothing (a 4xx status but a timeout).
// Anything else (a lost connection, a cancelled context, a 5xx) leaves it
// unknown whether the object exists.
func refused(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	code := st.Status().Code
	return code >= 400 && code < 500 && code != http.StatusRequestTimeout
}
