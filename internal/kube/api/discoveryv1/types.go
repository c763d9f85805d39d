// Package discoveryv1 holds the EndpointSlice of API group
// discovery.k8s.io (v1), with the JSON names of k8s.io/api/discovery/v1
// and only the fields llmchaos reads or writes.
package discoveryv1

import (
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/schema"
)

// SchemeGroupVersion is the group's version.
var SchemeGroupVersion = schema.GroupVersion{Group: "discovery.k8s.io", Version: "v1"}

// LabelServiceName labels a slice with its Service's name.
const LabelServiceName = "kubernetes.io/service-name"

// AddressType is the kind of a slice's addresses.
type AddressType string

// Address types.
const (
	AddressTypeIPv4 AddressType = "IPv4"
	AddressTypeIPv6 AddressType = "IPv6"
	AddressTypeFQDN AddressType = "FQDN"
)

// EndpointSlice is an EndpointSlice.
type EndpointSlice struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitzero"`
	AddressType       AddressType    `json:"addressType"`
	Endpoints         []Endpoint     `json:"endpoints"`
	Ports             []EndpointPort `json:"ports"`
}

// EndpointSliceList is a list of EndpointSlices.
type EndpointSliceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []EndpointSlice `json:"items"`
}

// Endpoint is one endpoint of a slice.
type Endpoint struct {
	Addresses  []string                `json:"addresses"`
	Conditions EndpointConditions      `json:"conditions,omitzero"`
	Hostname   *string                 `json:"hostname,omitempty"`
	TargetRef  *corev1.ObjectReference `json:"targetRef,omitempty"`
	NodeName   *string                 `json:"nodeName,omitempty"`
}

// EndpointConditions is an endpoint's state.
type EndpointConditions struct {
	Ready       *bool `json:"ready,omitempty"`
	Serving     *bool `json:"serving,omitempty"`
	Terminating *bool `json:"terminating,omitempty"`
}

// EndpointPort is a port of a slice.
type EndpointPort struct {
	Name        *string          `json:"name,omitempty"`
	Protocol    *corev1.Protocol `json:"protocol,omitempty"`
	Port        *int32           `json:"port,omitempty"`
	AppProtocol *string          `json:"appProtocol,omitempty"`
}
