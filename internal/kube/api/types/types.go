// Package types holds the small shared types of the API: UIDs and patch
// types.
package types

import "github.com/llmchaos/llmchaos/internal/kube/api/metav1"

// UID is an object's unique id.
type UID = metav1.UID

// PatchType is the Content-Type of a patch.
type PatchType string

// Patch types.
const (
	JSONPatchType           PatchType = "application/json-patch+json"
	MergePatchType          PatchType = "application/merge-patch+json"
	StrategicMergePatchType PatchType = "application/strategic-merge-patch+json"
	ApplyPatchType          PatchType = "application/apply-patch+yaml"
)
