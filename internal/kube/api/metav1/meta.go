// Package metav1 holds the object metadata, options and status of the
// Kubernetes API that llmchaos reads and writes, with the JSON names of
// k8s.io/apimachinery's meta/v1: only the fields llmchaos uses, so objects
// read through these types must never be written back whole (patch them).
package metav1

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/internal/kube/api/labels"
)

// UID is an object's unique id, set by the server.
type UID string

// TypeMeta is an object's kind and API version.
type TypeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// ListMeta is a list's metadata: the resource version to watch from.
type ListMeta struct {
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Continue        string `json:"continue,omitempty"`
}

// ObjectMeta is an object's metadata.
type ObjectMeta struct {
	Name                       string               `json:"name,omitempty"`
	GenerateName               string               `json:"generateName,omitempty"`
	Namespace                  string               `json:"namespace,omitempty"`
	UID                        UID                  `json:"uid,omitempty"`
	ResourceVersion            string               `json:"resourceVersion,omitempty"`
	Generation                 int64                `json:"generation,omitempty"`
	CreationTimestamp          Time                 `json:"creationTimestamp,omitzero"`
	DeletionTimestamp          *Time                `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64               `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string    `json:"labels,omitempty"`
	Annotations                map[string]string    `json:"annotations,omitempty"`
	OwnerReferences            []OwnerReference     `json:"ownerReferences,omitempty"`
	Finalizers                 []string             `json:"finalizers,omitempty"`
	ManagedFields              []ManagedFieldsEntry `json:"managedFields,omitempty"`
}

// GetName returns the object's name.
func (m *ObjectMeta) GetName() string { return m.Name }

// GetNamespace returns the object's namespace.
func (m *ObjectMeta) GetNamespace() string { return m.Namespace }

// GetResourceVersion returns the object's resource version.
func (m *ObjectMeta) GetResourceVersion() string { return m.ResourceVersion }

// GetUID returns the object's UID.
func (m *ObjectMeta) GetUID() UID { return m.UID }

// GetLabels returns the object's labels.
func (m *ObjectMeta) GetLabels() map[string]string { return m.Labels }

// GetOwnerReferences returns the object's owners.
func (m *ObjectMeta) GetOwnerReferences() []OwnerReference { return m.OwnerReferences }

// Object is what every API object's metadata gives (ObjectMeta, and
// unstructured objects).
type Object interface {
	GetName() string
	GetNamespace() string
	GetResourceVersion() string
	GetUID() UID
	GetLabels() map[string]string
	GetOwnerReferences() []OwnerReference
}

var _ Object = (*ObjectMeta)(nil)

// OwnerReference names an object's owner.
type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                UID    `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

// GetControllerOf returns the owner of o that is its controller, or nil.
func GetControllerOf(o Object) *OwnerReference {
	for _, r := range o.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			return &r
		}
	}
	return nil
}

// Time is a time as the API writes it: RFC 3339 in UTC, to the second;
// the zero time is null.
type Time struct {
	time.Time
}

// NewTime returns t as a Time.
func NewTime(t time.Time) Time { return Time{t} }

// Now returns the current time as a Time.
func Now() Time { return Time{time.Now()} }

// IsZero reports whether t is unset (nil or the zero time).
func (t *Time) IsZero() bool { return t == nil || t.Time.IsZero() }

// MarshalJSON writes t as RFC 3339 in UTC, or null when zero.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.Time.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.UTC().Format(time.RFC3339))
}

// UnmarshalJSON reads an RFC 3339 time or null.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("time: %w", err)
	}
	pt, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return fmt.Errorf("time %q: %w", s, err)
	}
	t.Time = pt.Local()
	return nil
}

// String writes t as RFC 3339, or "<nil>" for a nil one.
func (t *Time) String() string {
	if t == nil {
		return "<nil>"
	}
	return t.Time.String()
}

// LabelSelector selects objects by their labels.
type LabelSelector struct {
	MatchLabels      map[string]string          `json:"matchLabels,omitempty"`
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one expression of a LabelSelector.
type LabelSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// String writes s as a selector string (app=x,tier in (a,b)).
func (s *LabelSelector) String() string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, k := range sortedKeys(s.MatchLabels) {
		parts = append(parts, k+"="+s.MatchLabels[k])
	}
	for _, e := range s.MatchExpressions {
		switch e.Operator {
		case "In":
			parts = append(parts, e.Key+" in ("+strings.Join(e.Values, ",")+")")
		case "NotIn":
			parts = append(parts, e.Key+" notin ("+strings.Join(e.Values, ",")+")")
		case "Exists":
			parts = append(parts, e.Key)
		case "DoesNotExist":
			parts = append(parts, "!"+e.Key)
		}
	}
	return strings.Join(parts, ",")
}

// ManagedFieldsEntry is one field manager's entry (only its name is read).
type ManagedFieldsEntry struct {
	Manager string `json:"manager,omitempty"`
}

// APIResourceList is what the server serves in one group version.
type APIResourceList struct {
	TypeMeta     `json:",inline"`
	GroupVersion string        `json:"groupVersion"`
	APIResources []APIResource `json:"resources"`
}

// APIResource is one resource a group version serves.
type APIResource struct {
	Name         string   `json:"name"`
	SingularName string   `json:"singularName"`
	Namespaced   bool     `json:"namespaced"`
	Kind         string   `json:"kind"`
	Verbs        []string `json:"verbs"`
}

// Status is the server's answer to a failed request (and to a few that
// succeed, such as a delete of a collection).
type Status struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata,omitzero"`
	// Status is "Success" or "Failure".
	Status  string         `json:"status,omitempty"`
	Message string         `json:"message,omitempty"`
	Reason  StatusReason   `json:"reason,omitempty"`
	Details *StatusDetails `json:"details,omitempty"`
	Code    int32          `json:"code,omitempty"`
}

// StatusDetails names the object a Status is about.
type StatusDetails struct {
	Name              string        `json:"name,omitempty"`
	Group             string        `json:"group,omitempty"`
	Kind              string        `json:"kind,omitempty"`
	UID               UID           `json:"uid,omitempty"`
	Causes            []StatusCause `json:"causes,omitempty"`
	RetryAfterSeconds int32         `json:"retryAfterSeconds,omitempty"`
}

// StatusCause is one cause of a failure (a field that is invalid).
type StatusCause struct {
	Type    string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Field   string `json:"field,omitempty"`
}

// StatusReason says why a request failed, in one word.
type StatusReason string

// The reasons llmchaos tells apart (apierrors has a helper for each).
const (
	StatusReasonUnknown            StatusReason = ""
	StatusReasonUnauthorized       StatusReason = "Unauthorized"
	StatusReasonForbidden          StatusReason = "Forbidden"
	StatusReasonNotFound           StatusReason = "NotFound"
	StatusReasonAlreadyExists      StatusReason = "AlreadyExists"
	StatusReasonConflict           StatusReason = "Conflict"
	StatusReasonGone               StatusReason = "Gone"
	StatusReasonInvalid            StatusReason = "Invalid"
	StatusReasonServerTimeout      StatusReason = "ServerTimeout"
	StatusReasonTimeout            StatusReason = "Timeout"
	StatusReasonTooManyRequests    StatusReason = "TooManyRequests"
	StatusReasonBadRequest         StatusReason = "BadRequest"
	StatusReasonMethodNotAllowed   StatusReason = "MethodNotAllowed"
	StatusReasonNotAcceptable      StatusReason = "NotAcceptable"
	StatusReasonUnsupportedMedia   StatusReason = "UnsupportedMediaType"
	StatusReasonInternalError      StatusReason = "InternalError"
	StatusReasonExpired            StatusReason = "Expired"
	StatusReasonServiceUnavailable StatusReason = "ServiceUnavailable"
	StatusReasonRequestEntityLarge StatusReason = "RequestEntityTooLarge"
)

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// MicroTime is a time to the microsecond, as events' eventTime.
type MicroTime struct {
	time.Time
}

const microTimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// MarshalJSON writes t to the microsecond in UTC, or null when zero.
func (t MicroTime) MarshalJSON() ([]byte, error) {
	if t.Time.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.UTC().Format(microTimeLayout))
}

// UnmarshalJSON reads a time to the microsecond, or null.
func (t *MicroTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("micro time: %w", err)
	}
	pt, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("micro time %q: %w", s, err)
	}
	t.Time = pt.Local()
	return nil
}

// ParseToLabelSelector parses selector (kubectl's -l) into a LabelSelector.
func ParseToLabelSelector(selector string) (*LabelSelector, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("couldn't parse the selector string %q: %w", selector, err)
	}
	out := &LabelSelector{MatchLabels: map[string]string{}}
	for _, r := range sel.Requirements() {
		switch r.Operator {
		case labels.Equals, labels.DoubleEquals:
			out.MatchLabels[r.Key] = r.Values[0]
		case labels.In:
			out.MatchExpressions = append(out.MatchExpressions, LabelSelectorRequirement{Key: r.Key, Operator: "In", Values: r.Values})
		case labels.NotEquals, labels.NotIn:
			out.MatchExpressions = append(out.MatchExpressions, LabelSelectorRequirement{Key: r.Key, Operator: "NotIn", Values: r.Values})
		case labels.Exists:
			out.MatchExpressions = append(out.MatchExpressions, LabelSelectorRequirement{Key: r.Key, Operator: "Exists"})
		case labels.DoesNotExist:
			out.MatchExpressions = append(out.MatchExpressions, LabelSelectorRequirement{Key: r.Key, Operator: "DoesNotExist"})
		default:
			return nil, fmt.Errorf("%q isn't supported in label selectors", r.Operator)
		}
	}
	return out, nil
}
