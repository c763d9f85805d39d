// Package corev1 holds the kinds of the Kubernetes core group (v1) that
// llmchaos uses, with the JSON names of k8s.io/api/core/v1 and only the
// fields llmchaos reads or writes: an object read through them must never
// be written back whole (patch it instead).
package corev1

import (
	"github.com/llmchaos/llmchaos/internal/kube/api/intstr"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/resource"
	"github.com/llmchaos/llmchaos/internal/kube/api/schema"
)

// SchemeGroupVersion is the core group's version.
var SchemeGroupVersion = schema.GroupVersion{Version: "v1"}

// Well-known labels.
const (
	LabelHostname   = "kubernetes.io/hostname"
	LabelOSStable   = "kubernetes.io/os"
	LabelArchStable = "kubernetes.io/arch"
)

// Pod is a pod.
type Pod struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`
	Spec              PodSpec   `json:"spec,omitzero"`
	Status            PodStatus `json:"status,omitzero"`
}

// PodList is a list of pods.
type PodList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Pod `json:"items"`
}

// PodSpec is what a pod runs.
type PodSpec struct {
	Volumes                       []Volume               `json:"volumes,omitempty"`
	InitContainers                []Container            `json:"initContainers,omitempty"`
	Containers                    []Container            `json:"containers"`
	RestartPolicy                 RestartPolicy          `json:"restartPolicy,omitempty"`
	TerminationGracePeriodSeconds *int64                 `json:"terminationGracePeriodSeconds,omitempty"`
	ActiveDeadlineSeconds         *int64                 `json:"activeDeadlineSeconds,omitempty"`
	NodeSelector                  map[string]string      `json:"nodeSelector,omitempty"`
	ServiceAccountName            string                 `json:"serviceAccountName,omitempty"`
	AutomountServiceAccountToken  *bool                  `json:"automountServiceAccountToken,omitempty"`
	NodeName                      string                 `json:"nodeName,omitempty"`
	HostNetwork                   bool                   `json:"hostNetwork,omitempty"`
	HostPID                       bool                   `json:"hostPID,omitempty"`
	SecurityContext               *PodSecurityContext    `json:"securityContext,omitempty"`
	ImagePullSecrets              []LocalObjectReference `json:"imagePullSecrets,omitempty"`
	Tolerations                   []Toleration           `json:"tolerations,omitempty"`
	PriorityClassName             string                 `json:"priorityClassName,omitempty"`
	RuntimeClassName              *string                `json:"runtimeClassName,omitempty"`
	EnableServiceLinks            *bool                  `json:"enableServiceLinks,omitempty"`
}

// Volume is a volume of a pod (host paths and empty dirs).
type Volume struct {
	Name         string `json:"name"`
	VolumeSource `json:",inline"`
}

// VolumeSource says what a volume holds.
type VolumeSource struct {
	HostPath *HostPathVolumeSource `json:"hostPath,omitempty"`
	EmptyDir *EmptyDirVolumeSource `json:"emptyDir,omitempty"`
}

// HostPathVolumeSource is a path on the node.
type HostPathVolumeSource struct {
	Path string  `json:"path"`
	Type *string `json:"type,omitempty"`
}

// EmptyDirVolumeSource is an empty directory.
type EmptyDirVolumeSource struct {
	Medium string `json:"medium,omitempty"`
}

// VolumeMount mounts a volume in a container.
type VolumeMount struct {
	Name      string `json:"name"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	MountPath string `json:"mountPath"`
}

// RestartPolicy says when a pod's containers restart.
type RestartPolicy string

// The restart policies.
const (
	RestartPolicyAlways    RestartPolicy = "Always"
	RestartPolicyOnFailure RestartPolicy = "OnFailure"
	RestartPolicyNever     RestartPolicy = "Never"
)

// Container is a container of a pod.
type Container struct {
	Name                     string                   `json:"name"`
	Image                    string                   `json:"image,omitempty"`
	Command                  []string                 `json:"command,omitempty"`
	Args                     []string                 `json:"args,omitempty"`
	WorkingDir               string                   `json:"workingDir,omitempty"`
	Ports                    []ContainerPort          `json:"ports,omitempty"`
	Env                      []EnvVar                 `json:"env,omitempty"`
	Resources                ResourceRequirements     `json:"resources,omitzero"`
	VolumeMounts             []VolumeMount            `json:"volumeMounts,omitempty"`
	ReadinessProbe           *Probe                   `json:"readinessProbe,omitempty"`
	LivenessProbe            *Probe                   `json:"livenessProbe,omitempty"`
	TerminationMessagePolicy TerminationMessagePolicy `json:"terminationMessagePolicy,omitempty"`
	ImagePullPolicy          PullPolicy               `json:"imagePullPolicy,omitempty"`
	SecurityContext          *SecurityContext         `json:"securityContext,omitempty"`
}

// ContainerPort is a port a container listens on.
type ContainerPort struct {
	Name          string   `json:"name,omitempty"`
	ContainerPort int32    `json:"containerPort"`
	Protocol      Protocol `json:"protocol,omitempty"`
}

// Protocol is a network protocol (TCP).
type Protocol string

// Protocols.
const (
	ProtocolTCP Protocol = "TCP"
	ProtocolUDP Protocol = "UDP"
)

// EnvVar is a variable of a container's environment.
type EnvVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource takes a variable's value from a field or a Secret.
type EnvVarSource struct {
	FieldRef     *ObjectFieldSelector `json:"fieldRef,omitempty"`
	SecretKeyRef *SecretKeySelector   `json:"secretKeyRef,omitempty"`
}

// ObjectFieldSelector is a field of the pod.
type ObjectFieldSelector struct {
	APIVersion string `json:"apiVersion,omitempty"`
	FieldPath  string `json:"fieldPath"`
}

// SecretKeySelector is a key of a Secret.
type SecretKeySelector struct {
	LocalObjectReference `json:",inline"`
	Key                  string `json:"key"`
	Optional             *bool  `json:"optional,omitempty"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	Name string `json:"name,omitempty"`
}

// ResourceName names a resource (cpu, memory, nvidia.com/gpu).
type ResourceName string

// Resource names.
const (
	ResourceCPU    ResourceName = "cpu"
	ResourceMemory ResourceName = "memory"
	ResourcePods   ResourceName = "pods"
)

// ResourceList is amounts of resources.
type ResourceList map[ResourceName]resource.Quantity

// ResourceRequirements is a container's limits and requests.
type ResourceRequirements struct {
	Limits   ResourceList `json:"limits,omitempty"`
	Requests ResourceList `json:"requests,omitempty"`
}

// Probe checks a container.
type Probe struct {
	ProbeHandler        `json:",inline"`
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`
	TimeoutSeconds      int32 `json:"timeoutSeconds,omitempty"`
	PeriodSeconds       int32 `json:"periodSeconds,omitempty"`
	SuccessThreshold    int32 `json:"successThreshold,omitempty"`
	FailureThreshold    int32 `json:"failureThreshold,omitempty"`
}

// ProbeHandler is how a probe checks.
type ProbeHandler struct {
	Exec    *ExecAction    `json:"exec,omitempty"`
	HTTPGet *HTTPGetAction `json:"httpGet,omitempty"`
}

// ExecAction runs a command.
type ExecAction struct {
	Command []string `json:"command,omitempty"`
}

// HTTPGetAction sends a GET.
type HTTPGetAction struct {
	Path   string             `json:"path,omitempty"`
	Port   intstr.IntOrString `json:"port"`
	Host   string             `json:"host,omitempty"`
	Scheme string             `json:"scheme,omitempty"`
}

// TerminationMessagePolicy says where a container's termination message
// comes from.
type TerminationMessagePolicy string

// Termination message policies.
const (
	TerminationMessageReadFile              TerminationMessagePolicy = "File"
	TerminationMessageFallbackToLogsOnError TerminationMessagePolicy = "FallbackToLogsOnError"
)

// PullPolicy says when an image is pulled.
type PullPolicy string

// Pull policies.
const (
	PullAlways       PullPolicy = "Always"
	PullNever        PullPolicy = "Never"
	PullIfNotPresent PullPolicy = "IfNotPresent"
)

// SecurityContext is a container's security settings.
type SecurityContext struct {
	Capabilities             *Capabilities   `json:"capabilities,omitempty"`
	Privileged               *bool           `json:"privileged,omitempty"`
	RunAsUser                *int64          `json:"runAsUser,omitempty"`
	RunAsGroup               *int64          `json:"runAsGroup,omitempty"`
	RunAsNonRoot             *bool           `json:"runAsNonRoot,omitempty"`
	ReadOnlyRootFilesystem   *bool           `json:"readOnlyRootFilesystem,omitempty"`
	AllowPrivilegeEscalation *bool           `json:"allowPrivilegeEscalation,omitempty"`
	SeccompProfile           *SeccompProfile `json:"seccompProfile,omitempty"`
}

// Capabilities adds and drops Linux capabilities.
type Capabilities struct {
	Add  []Capability `json:"add,omitempty"`
	Drop []Capability `json:"drop,omitempty"`
}

// Capability is a Linux capability (NET_ADMIN).
type Capability string

// PodSecurityContext is a pod's security settings.
type PodSecurityContext struct {
	RunAsUser      *int64          `json:"runAsUser,omitempty"`
	RunAsGroup     *int64          `json:"runAsGroup,omitempty"`
	RunAsNonRoot   *bool           `json:"runAsNonRoot,omitempty"`
	FSGroup        *int64          `json:"fsGroup,omitempty"`
	SeccompProfile *SeccompProfile `json:"seccompProfile,omitempty"`
}

// SeccompProfile is a seccomp profile.
type SeccompProfile struct {
	Type             SeccompProfileType `json:"type"`
	LocalhostProfile *string            `json:"localhostProfile,omitempty"`
}

// SeccompProfileType says which profile.
type SeccompProfileType string

// Seccomp profile types.
const (
	SeccompProfileTypeUnconfined     SeccompProfileType = "Unconfined"
	SeccompProfileTypeRuntimeDefault SeccompProfileType = "RuntimeDefault"
	SeccompProfileTypeLocalhost      SeccompProfileType = "Localhost"
)

// Toleration lets a pod run on nodes with a taint.
type Toleration struct {
	Key               string             `json:"key,omitempty"`
	Operator          TolerationOperator `json:"operator,omitempty"`
	Value             string             `json:"value,omitempty"`
	Effect            TaintEffect        `json:"effect,omitempty"`
	TolerationSeconds *int64             `json:"tolerationSeconds,omitempty"`
}

// TolerationOperator is how a toleration matches a taint.
type TolerationOperator string

// Toleration operators.
const (
	TolerationOpExists TolerationOperator = "Exists"
	TolerationOpEqual  TolerationOperator = "Equal"
)

// TaintEffect is what a taint does.
type TaintEffect string

// Taint effects.
const (
	TaintEffectNoSchedule       TaintEffect = "NoSchedule"
	TaintEffectPreferNoSchedule TaintEffect = "PreferNoSchedule"
	TaintEffectNoExecute        TaintEffect = "NoExecute"
)

// Taint keeps pods off a node.
type Taint struct {
	Key    string      `json:"key"`
	Value  string      `json:"value,omitempty"`
	Effect TaintEffect `json:"effect"`
}

// PodStatus is a pod's state.
type PodStatus struct {
	Phase             PodPhase          `json:"phase,omitempty"`
	Conditions        []PodCondition    `json:"conditions,omitempty"`
	Message           string            `json:"message,omitempty"`
	Reason            string            `json:"reason,omitempty"`
	HostIP            string            `json:"hostIP,omitempty"`
	PodIP             string            `json:"podIP,omitempty"`
	StartTime         *metav1.Time      `json:"startTime,omitempty"`
	ContainerStatuses []ContainerStatus `json:"containerStatuses,omitempty"`
}

// PodPhase is a pod's phase.
type PodPhase string

// Pod phases.
const (
	PodPending   PodPhase = "Pending"
	PodRunning   PodPhase = "Running"
	PodSucceeded PodPhase = "Succeeded"
	PodFailed    PodPhase = "Failed"
	PodUnknown   PodPhase = "Unknown"
)

// PodConditionType names a pod condition.
type PodConditionType string

// Pod conditions.
const (
	PodScheduled    PodConditionType = "PodScheduled"
	PodReady        PodConditionType = "Ready"
	PodInitialized  PodConditionType = "Initialized"
	ContainersReady PodConditionType = "ContainersReady"
)

// ConditionStatus is a condition's truth.
type ConditionStatus string

// Condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// PodCondition is one condition of a pod.
type PodCondition struct {
	Type               PodConditionType `json:"type"`
	Status             ConditionStatus  `json:"status"`
	LastTransitionTime metav1.Time      `json:"lastTransitionTime,omitzero"`
	Reason             string           `json:"reason,omitempty"`
	Message            string           `json:"message,omitempty"`
}

// ContainerStatus is a container's state.
type ContainerStatus struct {
	Name                 string         `json:"name"`
	State                ContainerState `json:"state,omitzero"`
	LastTerminationState ContainerState `json:"lastState,omitzero"`
	Ready                bool           `json:"ready"`
	RestartCount         int32          `json:"restartCount"`
	Image                string         `json:"image,omitempty"`
	ContainerID          string         `json:"containerID,omitempty"`
}

// ContainerState is one of a container's states.
type ContainerState struct {
	Waiting    *ContainerStateWaiting    `json:"waiting,omitempty"`
	Running    *ContainerStateRunning    `json:"running,omitempty"`
	Terminated *ContainerStateTerminated `json:"terminated,omitempty"`
}

// ContainerStateWaiting is a container not started yet.
type ContainerStateWaiting struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ContainerStateRunning is a running container.
type ContainerStateRunning struct {
	StartedAt metav1.Time `json:"startedAt,omitzero"`
}

// ContainerStateTerminated is a container that ended.
type ContainerStateTerminated struct {
	ExitCode   int32       `json:"exitCode"`
	Signal     int32       `json:"signal,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	Message    string      `json:"message,omitempty"`
	StartedAt  metav1.Time `json:"startedAt,omitzero"`
	FinishedAt metav1.Time `json:"finishedAt,omitzero"`
}

// PodTemplateSpec is the pods a workload makes.
type PodTemplateSpec struct {
	metav1.ObjectMeta `json:"metadata,omitzero"`
	Spec              PodSpec `json:"spec,omitzero"`
}

// PodLogOptions selects the logs read.
type PodLogOptions struct {
	Container    string
	Follow       bool
	Previous     bool
	SinceSeconds *int64
	Timestamps   bool
	TailLines    *int64
	LimitBytes   *int64
}

// Namespace is a namespace.
type Namespace struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`
	Status            NamespaceStatus `json:"status,omitzero"`
}

// NamespaceStatus is a namespace's phase.
type NamespaceStatus struct {
	Phase string `json:"phase,omitempty"`
}

// NamespaceList is a list of namespaces.
type NamespaceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Namespace `json:"items"`
}

// Node is a node.
type Node struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`
	Spec              NodeSpec   `json:"spec,omitzero"`
	Status            NodeStatus `json:"status,omitzero"`
}

// NodeList is a list of nodes.
type NodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Node `json:"items"`
}

// NodeSpec is a node's settings.
type NodeSpec struct {
	PodCIDR       string   `json:"podCIDR,omitempty"`
	PodCIDRs      []string `json:"podCIDRs,omitempty"`
	Unschedulable bool     `json:"unschedulable,omitempty"`
	Taints        []Taint  `json:"taints,omitempty"`
}

// NodeStatus is a node's state.
type NodeStatus struct {
	Capacity    ResourceList    `json:"capacity,omitempty"`
	Allocatable ResourceList    `json:"allocatable,omitempty"`
	Conditions  []NodeCondition `json:"conditions,omitempty"`
	Addresses   []NodeAddress   `json:"addresses,omitempty"`
	NodeInfo    NodeSystemInfo  `json:"nodeInfo,omitzero"`
}

// NodeConditionType names a node condition.
type NodeConditionType string

// Node conditions.
const NodeReady NodeConditionType = "Ready"

// NodeCondition is one condition of a node.
type NodeCondition struct {
	Type    NodeConditionType `json:"type"`
	Status  ConditionStatus   `json:"status"`
	Reason  string            `json:"reason,omitempty"`
	Message string            `json:"message,omitempty"`
}

// NodeAddressType is the kind of a node address.
type NodeAddressType string

// Node address types.
const (
	NodeHostName   NodeAddressType = "Hostname"
	NodeInternalIP NodeAddressType = "InternalIP"
	NodeExternalIP NodeAddressType = "ExternalIP"
)

// NodeAddress is an address of a node.
type NodeAddress struct {
	Type    NodeAddressType `json:"type"`
	Address string          `json:"address"`
}

// NodeSystemInfo is what a node runs.
type NodeSystemInfo struct {
	MachineID               string `json:"machineID,omitempty"`
	KernelVersion           string `json:"kernelVersion,omitempty"`
	OSImage                 string `json:"osImage,omitempty"`
	ContainerRuntimeVersion string `json:"containerRuntimeVersion,omitempty"`
	KubeletVersion          string `json:"kubeletVersion,omitempty"`
	OperatingSystem         string `json:"operatingSystem,omitempty"`
	Architecture            string `json:"architecture,omitempty"`
}

// Service is a Service.
type Service struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`
	Spec              ServiceSpec `json:"spec,omitzero"`
}

// ServiceList is a list of Services.
type ServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Service `json:"items"`
}

// ServiceSpec is a Service's settings.
type ServiceSpec struct {
	Ports     []ServicePort     `json:"ports,omitempty"`
	Selector  map[string]string `json:"selector,omitempty"`
	ClusterIP string            `json:"clusterIP,omitempty"`
	Type      string            `json:"type,omitempty"`
}

// ServicePort is a port of a Service.
type ServicePort struct {
	Name       string             `json:"name,omitempty"`
	Protocol   Protocol           `json:"protocol,omitempty"`
	Port       int32              `json:"port"`
	TargetPort intstr.IntOrString `json:"targetPort,omitzero"`
}

// ServiceAccount is a service account.
type ServiceAccount struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`
}

// ServiceAccountList is a list of service accounts.
type ServiceAccountList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []ServiceAccount `json:"items"`
}

// Secret is a Secret.
type Secret struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`
	Data              map[string][]byte `json:"data,omitempty"`
	StringData        map[string]string `json:"stringData,omitempty"`
	Type              string            `json:"type,omitempty"`
}

// SecretList is a list of Secrets.
type SecretList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Secret `json:"items"`
}

// Event is an event (the core group's).
type Event struct {
	metav1.TypeMeta     `json:",inline"`
	metav1.ObjectMeta   `json:"metadata,omitzero"`
	InvolvedObject      ObjectReference  `json:"involvedObject"`
	Reason              string           `json:"reason,omitempty"`
	Message             string           `json:"message,omitempty"`
	Source              EventSource      `json:"source,omitzero"`
	FirstTimestamp      metav1.Time      `json:"firstTimestamp,omitzero"`
	LastTimestamp       metav1.Time      `json:"lastTimestamp,omitzero"`
	Count               int32            `json:"count,omitempty"`
	Type                string           `json:"type,omitempty"`
	EventTime           metav1.MicroTime `json:"eventTime,omitzero"`
	Series              *EventSeries     `json:"series,omitempty"`
	ReportingController string           `json:"reportingComponent,omitempty"`
	ReportingInstance   string           `json:"reportingInstance,omitempty"`
	Action              string           `json:"action,omitempty"`
}

// EventSeries is a run of the same event.
type EventSeries struct {
	Count            int32            `json:"count,omitempty"`
	LastObservedTime metav1.MicroTime `json:"lastObservedTime,omitzero"`
}

// EventSource is what reported an event.
type EventSource struct {
	Component string `json:"component,omitempty"`
	Host      string `json:"host,omitempty"`
}

// Event types.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// EventList is a list of events.
type EventList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []Event `json:"items"`
}

// ObjectReference names an object.
type ObjectReference struct {
	Kind            string     `json:"kind,omitempty"`
	Namespace       string     `json:"namespace,omitempty"`
	Name            string     `json:"name,omitempty"`
	UID             metav1.UID `json:"uid,omitempty"`
	APIVersion      string     `json:"apiVersion,omitempty"`
	ResourceVersion string     `json:"resourceVersion,omitempty"`
	FieldPath       string     `json:"fieldPath,omitempty"`
}
