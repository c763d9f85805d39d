// Package unstructured holds objects of any kind as JSON maps (Chaos
// Mesh's custom resources), as apimachinery's unstructured package.
package unstructured

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

// Unstructured is an object of any kind.
type Unstructured struct {
	Object map[string]any
}

// UnstructuredList is a list of objects of any kind.
type UnstructuredList struct {
	Object map[string]any
	Items  []Unstructured
}

// MarshalJSON writes the object.
func (u *Unstructured) MarshalJSON() ([]byte, error) { return json.Marshal(u.Object) }

// UnmarshalJSON reads an object: whole numbers as int64, others as
// float64, as apimachinery reads them.
func (u *Unstructured) UnmarshalJSON(b []byte) error {
	m, err := decodeMap(b)
	if err != nil {
		return err
	}
	u.Object = m
	return nil
}

// decodeMap decodes a JSON object with numbers as int64 when whole.
func decodeMap(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return convertNumbers(m).(map[string]any), nil
}

func convertNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = convertNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = convertNumbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	}
	return v
}

// UnmarshalJSON reads a list.
func (l *UnstructuredList) UnmarshalJSON(b []byte) error {
	raw, err := decodeMap(b)
	if err != nil {
		return err
	}
	items, _ := raw["items"].([]any)
	delete(raw, "items")
	l.Object, l.Items = raw, make([]Unstructured, 0, len(items))
	for n, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return fmt.Errorf("items[%d]: a %T, not an object", n, it)
		}
		l.Items = append(l.Items, Unstructured{Object: m})
	}
	return nil
}

// GetResourceVersion returns the list's resource version.
func (l *UnstructuredList) GetResourceVersion() string {
	s, _, _ := NestedString(l.Object, "metadata", "resourceVersion")
	return s
}

func (u *Unstructured) meta(field string) string {
	s, _, _ := NestedString(u.Object, "metadata", field)
	return s
}

// GetName returns the object's name.
func (u *Unstructured) GetName() string { return u.meta("name") }

// GetNamespace returns the object's namespace.
func (u *Unstructured) GetNamespace() string { return u.meta("namespace") }

// GetResourceVersion returns the object's resource version.
func (u *Unstructured) GetResourceVersion() string { return u.meta("resourceVersion") }

// GetUID returns the object's UID.
func (u *Unstructured) GetUID() metav1.UID { return metav1.UID(u.meta("uid")) }

// GetKind returns the object's kind.
func (u *Unstructured) GetKind() string { s, _, _ := NestedString(u.Object, "kind"); return s }

// GetAPIVersion returns the object's API version.
func (u *Unstructured) GetAPIVersion() string {
	s, _, _ := NestedString(u.Object, "apiVersion")
	return s
}

// GetLabels returns the object's labels.
func (u *Unstructured) GetLabels() map[string]string { return u.stringMap("labels") }

// GetAnnotations returns the object's annotations.
func (u *Unstructured) GetAnnotations() map[string]string { return u.stringMap("annotations") }

func (u *Unstructured) stringMap(field string) map[string]string {
	m, _, _ := NestedFieldNoCopy(u.Object, "metadata", field)
	mm, ok := m.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(mm))
	for k, v := range mm {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// GetFinalizers returns the object's finalizers.
func (u *Unstructured) GetFinalizers() []string {
	v, _, _ := NestedFieldNoCopy(u.Object, "metadata", "finalizers")
	list, _ := v.([]any)
	var out []string
	for _, f := range list {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// GetDeletionTimestamp returns when the object's deletion began, or nil.
func (u *Unstructured) GetDeletionTimestamp() *metav1.Time {
	s := u.meta("deletionTimestamp")
	if s == "" {
		return nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}

// GetOwnerReferences returns the object's owners.
func (u *Unstructured) GetOwnerReferences() []metav1.OwnerReference {
	v, _, _ := NestedFieldNoCopy(u.Object, "metadata", "ownerReferences")
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var refs []metav1.OwnerReference
	if json.Unmarshal(b, &refs) != nil {
		return nil
	}
	return refs
}

var _ metav1.Object = (*Unstructured)(nil)

// UnstructuredContent returns the object's map.
func (u *Unstructured) UnstructuredContent() map[string]any { return u.Object }

// NestedFieldNoCopy returns the value at path in obj, whether it is
// there, and an error when a step of path is not a map.
func NestedFieldNoCopy(obj map[string]any, path ...string) (any, bool, error) {
	var v any = obj
	for i, f := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false, fmt.Errorf("%v accessor error: %v is of the type %T, expected map[string]interface{}", path[:i+1], v, v)
		}
		if v, ok = m[f]; !ok {
			return nil, false, nil
		}
	}
	return v, true, nil
}

// NestedString returns the string at path in obj.
func NestedString(obj map[string]any, path ...string) (string, bool, error) {
	v, ok, err := NestedFieldNoCopy(obj, path...)
	if !ok || err != nil {
		return "", ok, err
	}
	s, ok := v.(string)
	if !ok {
		return "", false, fmt.Errorf("%v accessor error: %v is of the type %T, expected string", path, v, v)
	}
	return s, true, nil
}
