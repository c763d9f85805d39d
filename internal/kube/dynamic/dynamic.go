// Package dynamic reaches objects of any kind (custom resources) as
// unstructured JSON maps, as client-go's dynamic client.
package dynamic

import (
	"context"
	"net/http"

	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/schema"
	"github.com/llmchaos/llmchaos/internal/kube/api/types"
	"github.com/llmchaos/llmchaos/internal/kube/api/unstructured"
	"github.com/llmchaos/llmchaos/internal/kube/api/watch"
	"github.com/llmchaos/llmchaos/internal/kube/rest"
)

// Client is the dynamic client of a cluster.
type Client struct {
	rc *rest.Client
}

// New returns the dynamic client that sends through rc.
func New(rc *rest.Client) *Client { return &Client{rc: rc} }

// Resource returns the client of resource gvr, cluster-wide until
// Namespace names a namespace.
func (c *Client) Resource(gvr schema.GroupVersionResource) Resource {
	return Resource{rc: c.rc, gvr: gvr}
}

// Resource is the client of one resource, in one namespace or
// cluster-wide.
type Resource struct {
	rc  *rest.Client
	gvr schema.GroupVersionResource
	ns  string
}

// Namespace returns the client of the resource in namespace ns.
func (r Resource) Namespace(ns string) Resource {
	r.ns = ns
	return r
}

// ResourceInterface is what callers of a namespaced resource use.
type ResourceInterface = Resource

func (r Resource) path(name string, sub ...string) rest.Path {
	p := rest.Path{Prefix: rest.GroupPrefix(r.gvr.Group, r.gvr.Version), Namespace: r.ns, Resource: r.gvr.Resource, Name: name}
	if len(sub) > 0 {
		p.Subresource = sub[0]
	}
	return p
}

// Get returns object name.
func (r Resource) Get(ctx context.Context, name string, opts metav1.GetOptions) (*unstructured.Unstructured, error) {
	out := &unstructured.Unstructured{}
	err := r.rc.Do(ctx, rest.Request{Method: http.MethodGet, Path: r.path(name), Query: opts.Query()}, out)
	return out, err
}

// List returns the objects opts selects.
func (r Resource) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	out := &unstructured.UnstructuredList{}
	err := r.rc.Do(ctx, rest.Request{Method: http.MethodGet, Path: r.path(""), Query: opts.Query()}, out)
	return out, err
}

// Watch watches the objects opts selects.
func (r Resource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.rc.Watch(ctx, rest.Request{Method: http.MethodGet, Path: r.path(""), Query: opts.Query()},
		func() any { return &unstructured.Unstructured{} })
}

// Create creates obj and returns it as the server made it.
func (r Resource) Create(ctx context.Context, obj *unstructured.Unstructured, opts metav1.CreateOptions) (*unstructured.Unstructured, error) {
	out := &unstructured.Unstructured{}
	err := r.rc.Do(ctx, rest.Request{Method: http.MethodPost, Path: r.path(""), Query: opts.Query(), Body: obj}, out)
	return out, err
}

// Delete deletes object name.
func (r Resource) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	opts.Kind, opts.APIVersion = "DeleteOptions", "v1"
	return r.rc.Do(ctx, rest.Request{Method: http.MethodDelete, Path: r.path(name), Body: &opts}, nil)
}

// Patch patches object name (or its subresource) with data, a patch of
// type pt (rest.MergePatchType, ...).
func (r Resource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, sub ...string) (*unstructured.Unstructured, error) {
	out := &unstructured.Unstructured{}
	err := r.rc.Do(ctx, rest.Request{Method: http.MethodPatch, Path: r.path(name, sub...), Query: opts.Query(), Body: data, ContentType: string(pt)}, out)
	return out, err
}

// NewForConfig returns the dynamic client of cfg.
func NewForConfig(cfg *rest.Config) (*Client, error) {
	rc, err := rest.New(cfg)
	if err != nil {
		return nil, err
	}
	return New(rc), nil
}
