// Package batchv1 holds the Job of API group batch (v1), with the JSON
// names of k8s.io/api/batch/v1 and only the fields llmchaos reads or
// writes: never write a Job read through it back whole (patch it instead).
package batchv1

import (
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/schema"
)

// SchemeGroupVersion is the group's version.
var SchemeGroupVersion = schema.GroupVersion{Group: "batch", Version: "v1"}

// Labels and annotations the Job controller sets.
const (
	ControllerUidLabel           = "batch.kubernetes.io/controller-uid" //nolint:revive // Kubernetes's name
	JobNameLabel                 = "batch.kubernetes.io/job-name"
	JobCompletionIndexAnnotation = "batch.kubernetes.io/job-completion-index"
)

// Job is a Job.
type Job struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`
	Spec              JobSpec   `json:"spec,omitzero"`
	Status            JobStatus `json:"status,omitzero"`
}

// JobList is a list of Jobs.
type JobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Job `json:"items"`
}

// CompletionMode says how a Job's pods complete.
type CompletionMode string

// Completion modes.
const (
	NonIndexedCompletion CompletionMode = "NonIndexed"
	IndexedCompletion    CompletionMode = "Indexed"
)

// JobSpec is a Job's settings.
type JobSpec struct {
	Parallelism             *int32                 `json:"parallelism,omitempty"`
	Completions             *int32                 `json:"completions,omitempty"`
	ActiveDeadlineSeconds   *int64                 `json:"activeDeadlineSeconds,omitempty"`
	BackoffLimit            *int32                 `json:"backoffLimit,omitempty"`
	BackoffLimitPerIndex    *int32                 `json:"backoffLimitPerIndex,omitempty"`
	Selector                *metav1.LabelSelector  `json:"selector,omitempty"`
	ManualSelector          *bool                  `json:"manualSelector,omitempty"`
	Template                corev1.PodTemplateSpec `json:"template"`
	TTLSecondsAfterFinished *int32                 `json:"ttlSecondsAfterFinished,omitempty"`
	CompletionMode          *CompletionMode        `json:"completionMode,omitempty"`
	Suspend                 *bool                  `json:"suspend,omitempty"`
}

// JobStatus is a Job's state.
type JobStatus struct {
	Conditions     []JobCondition `json:"conditions,omitempty"`
	StartTime      *metav1.Time   `json:"startTime,omitempty"`
	CompletionTime *metav1.Time   `json:"completionTime,omitempty"`
	Active         int32          `json:"active,omitempty"`
	Succeeded      int32          `json:"succeeded,omitempty"`
	Failed         int32          `json:"failed,omitempty"`
	Ready          *int32         `json:"ready,omitempty"`
}

// JobConditionType names a Job condition.
type JobConditionType string

// Job conditions.
const (
	JobSuspended          JobConditionType = "Suspended"
	JobComplete           JobConditionType = "Complete"
	JobFailed             JobConditionType = "Failed"
	JobFailureTarget      JobConditionType = "FailureTarget"
	JobSuccessCriteriaMet JobConditionType = "SuccessCriteriaMet"
)

// JobCondition is one condition of a Job.
type JobCondition struct {
	Type    JobConditionType       `json:"type"`
	Status  corev1.ConditionStatus `json:"status"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`
}
