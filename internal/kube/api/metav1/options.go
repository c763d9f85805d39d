package metav1

import (
	"net/url"
	"strconv"
)

// ListOptions selects what a list or watch returns.
type ListOptions struct {
	LabelSelector        string
	FieldSelector        string
	ResourceVersion      string
	ResourceVersionMatch string
	TimeoutSeconds       *int64
	Watch                bool
	AllowWatchBookmarks  bool
	Limit                int64
	Continue             string
}

// Query returns o as the query parameters of a request.
func (o ListOptions) Query() url.Values {
	q := url.Values{}
	set(q, "labelSelector", o.LabelSelector)
	set(q, "fieldSelector", o.FieldSelector)
	set(q, "resourceVersion", o.ResourceVersion)
	set(q, "resourceVersionMatch", o.ResourceVersionMatch)
	if o.TimeoutSeconds != nil {
		q.Set("timeoutSeconds", strconv.FormatInt(*o.TimeoutSeconds, 10))
	}
	if o.Watch {
		q.Set("watch", "true")
	}
	if o.AllowWatchBookmarks {
		q.Set("allowWatchBookmarks", "true")
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.FormatInt(o.Limit, 10))
	}
	set(q, "continue", o.Continue)
	return q
}

// GetOptions are the options of a get.
type GetOptions struct {
	ResourceVersion string
}

// Query returns o as the query parameters of a request.
func (o GetOptions) Query() url.Values {
	q := url.Values{}
	set(q, "resourceVersion", o.ResourceVersion)
	return q
}

// DryRunAll asks the server to check a request without persisting it.
const DryRunAll = "All"

// CreateOptions are the options of a create.
type CreateOptions struct {
	DryRun       []string
	FieldManager string
}

// Query returns o as the query parameters of a request.
func (o CreateOptions) Query() url.Values { return writeQuery(o.DryRun, o.FieldManager, nil) }

// UpdateOptions are the options of an update.
type UpdateOptions struct {
	DryRun       []string
	FieldManager string
}

// Query returns o as the query parameters of a request.
func (o UpdateOptions) Query() url.Values { return writeQuery(o.DryRun, o.FieldManager, nil) }

// PatchOptions are the options of a patch.
type PatchOptions struct {
	DryRun       []string
	FieldManager string
	Force        *bool
}

// Query returns o as the query parameters of a request.
func (o PatchOptions) Query() url.Values { return writeQuery(o.DryRun, o.FieldManager, o.Force) }

func writeQuery(dryRun []string, manager string, force *bool) url.Values {
	q := url.Values{}
	for _, d := range dryRun {
		q.Add("dryRun", d)
	}
	set(q, "fieldManager", manager)
	if force != nil {
		q.Set("force", strconv.FormatBool(*force))
	}
	return q
}

// DeletionPropagation says what happens to an object's dependents when it
// is deleted.
type DeletionPropagation string

// The propagation policies.
const (
	DeletePropagationOrphan     DeletionPropagation = "Orphan"
	DeletePropagationBackground DeletionPropagation = "Background"
	DeletePropagationForeground DeletionPropagation = "Foreground"
)

// Preconditions must hold for a delete to happen.
type Preconditions struct {
	UID             *UID    `json:"uid,omitempty"`
	ResourceVersion *string `json:"resourceVersion,omitempty"`
}

// DeleteOptions are the options of a delete, sent as its body.
type DeleteOptions struct {
	TypeMeta           `json:",inline"`
	GracePeriodSeconds *int64               `json:"gracePeriodSeconds,omitempty"`
	Preconditions      *Preconditions       `json:"preconditions,omitempty"`
	PropagationPolicy  *DeletionPropagation `json:"propagationPolicy,omitempty"`
	DryRun             []string             `json:"dryRun,omitempty"`
}

func set(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}
