// Package appsv1 holds the kinds of API group apps (v1) that llmchaos
// uses, with the JSON names of k8s.io/api/apps/v1 and only the fields
// llmchaos reads or writes: never write an object read through them back
// whole (patch it instead).
package appsv1

import (
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/schema"
)

// SchemeGroupVersion is the group's version.
var SchemeGroupVersion = schema.GroupVersion{Group: "apps", Version: "v1"}

// WorkloadSpec is the part of the specs of Deployments, StatefulSets,
// DaemonSets and ReplicaSets that llmchaos uses.
type WorkloadSpec struct {
	Replicas *int32                 `json:"replicas,omitempty"`
	Selector *metav1.LabelSelector  `json:"selector"`
	Template corev1.PodTemplateSpec `json:"template"`
}

// WorkloadStatus is the part of their status llmchaos reads.
type WorkloadStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	Replicas           int32 `json:"replicas,omitempty"`
	ReadyReplicas      int32 `json:"readyReplicas,omitempty"`
	AvailableReplicas  int32 `json:"availableReplicas,omitempty"`
	UpdatedReplicas    int32 `json:"updatedReplicas,omitempty"`
}

// DeploymentSpec is a Deployment's settings.
type DeploymentSpec = WorkloadSpec

// StatefulSetSpec is a StatefulSet's settings.
type StatefulSetSpec struct {
	Replicas    *int32                 `json:"replicas,omitempty"`
	Selector    *metav1.LabelSelector  `json:"selector"`
	Template    corev1.PodTemplateSpec `json:"template"`
	ServiceName string                 `json:"serviceName,omitempty"`
}

// Deployment is a Deployment.
type Deployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`
	Spec              DeploymentSpec `json:"spec,omitzero"`
	Status            WorkloadStatus `json:"status,omitzero"`
}

// DeploymentList is a list of Deployments.
type DeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Deployment `json:"items"`
}

// StatefulSet is a StatefulSet.
type StatefulSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`
	Spec              StatefulSetSpec   `json:"spec,omitzero"`
	Status            StatefulSetStatus `json:"status,omitzero"`
}

// StatefulSetList is a list of StatefulSets.
type StatefulSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []StatefulSet `json:"items"`
}

// DaemonSet is a DaemonSet.
type DaemonSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`
	Spec              DaemonSetSpec   `json:"spec,omitzero"`
	Status            DaemonSetStatus `json:"status,omitzero"`
}

// DaemonSetStatus is a DaemonSet's rollout state.
type DaemonSetStatus struct {
	ObservedGeneration     int64 `json:"observedGeneration,omitempty"`
	DesiredNumberScheduled int32 `json:"desiredNumberScheduled"`
	UpdatedNumberScheduled int32 `json:"updatedNumberScheduled,omitempty"`
	NumberAvailable        int32 `json:"numberAvailable,omitempty"`
	NumberReady            int32 `json:"numberReady"`
}

// StatefulSetStatus is a StatefulSet's rollout state.
type StatefulSetStatus struct {
	WorkloadStatus  `json:",inline"`
	CurrentRevision string `json:"currentRevision,omitempty"`
	UpdateRevision  string `json:"updateRevision,omitempty"`
}

// DaemonSetSpec is a DaemonSet's settings.
type DaemonSetSpec struct {
	Selector *metav1.LabelSelector  `json:"selector"`
	Template corev1.PodTemplateSpec `json:"template"`
}

// DaemonSetList is a list of DaemonSets.
type DaemonSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []DaemonSet `json:"items"`
}

// ReplicaSet is a ReplicaSet.
type ReplicaSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`
	Spec              WorkloadSpec   `json:"spec,omitzero"`
	Status            WorkloadStatus `json:"status,omitzero"`
}

// ReplicaSetList is a list of ReplicaSets.
type ReplicaSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []ReplicaSet `json:"items"`
}
