package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"time"

	"github.com/llmchaos/llmchaos/internal/kube/api/appsv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/batchv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/corev1"
	"github.com/llmchaos/llmchaos/internal/kube/api/discoveryv1"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/api/types"
	"github.com/llmchaos/llmchaos/internal/kube/api/watch"
	"github.com/llmchaos/llmchaos/internal/kube/cache"
	"github.com/llmchaos/llmchaos/internal/kube/rest"
)

// Clientset is llmchaos's typed client of the Kubernetes API: the four API
// groups it uses (core, apps, batch, discovery.k8s.io), every kind through
// one generic Resource, with the calls of client-go's typed clients
// (CoreV1().Pods(ns).List(ctx, opts), ...), in JSON over net/http
// (internal/kube/rest) with llmchaos's own API types (internal/kube/api),
// which hold only the fields llmchaos uses. Safe for concurrent use.
type Clientset struct {
	rc *rest.Client
}

// NewClientset returns the clientset of cfg.
func NewClientset(cfg *rest.Config) (*Clientset, error) {
	rc, err := rest.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Clientset{rc: rc}, nil
}

// REST returns the clientset's REST client.
func (c *Clientset) REST() *rest.Client { return c.rc }

// CoreV1 returns the client of the core group.
func (c *Clientset) CoreV1() CoreV1 { return CoreV1{c.rc} }

// AppsV1 returns the client of group apps.
func (c *Clientset) AppsV1() AppsV1 { return AppsV1{c.rc} }

// BatchV1 returns the client of group batch.
func (c *Clientset) BatchV1() BatchV1 { return BatchV1{c.rc} }

// DiscoveryV1 returns the client of group discovery.k8s.io.
func (c *Clientset) DiscoveryV1() DiscoveryV1 { return DiscoveryV1{c.rc} }

// ServerResourcesForGroupVersion returns the resources the server serves
// in group version gv ("chaos-mesh.org/v1alpha1", or "v1" for the core
// group), as the discovery client of client-go; an error for which
// apierrors.IsNotFound holds when it serves no such group version.
func (c *Clientset) ServerResourcesForGroupVersion(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
	path := "/apis/" + gv
	if gv == "v1" {
		path = "/api/v1"
	}
	list := &metav1.APIResourceList{}
	if err := c.rc.Do(ctx, rest.Request{Method: http.MethodGet, Path: rest.Path{Prefix: path}}, list); err != nil {
		return nil, err
	}
	list.GroupVersion = gv // as client-go's discovery sets it, whatever the server said
	return list, nil
}

func resource[T, L any](rc *rest.Client, prefix, res, ns string) Resource[T, L] {
	return Resource[T, L]{rc: rc, prefix: prefix, resource: res, ns: ns}
}

var (
	corePrefix      = rest.GroupPrefix("", "v1")
	appsPrefix      = rest.GroupPrefix(appsv1.SchemeGroupVersion.Group, "v1")
	batchPrefix     = rest.GroupPrefix(batchv1.SchemeGroupVersion.Group, "v1")
	discoveryPrefix = rest.GroupPrefix(discoveryv1.SchemeGroupVersion.Group, "v1")
)

// CoreV1 is the client of the core group's kinds.
type CoreV1 struct{ rc *rest.Client }

// Pods returns the client of the pods of namespace ns.
func (c CoreV1) Pods(ns string) Pods {
	return Pods{resource[*corev1.Pod, *corev1.PodList](c.rc, corePrefix, "pods", ns)}
}

// Namespaces returns the client of namespaces.
func (c CoreV1) Namespaces() Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return resource[*corev1.Namespace, *corev1.NamespaceList](c.rc, corePrefix, "namespaces", "")
}

// Nodes returns the client of nodes.
func (c CoreV1) Nodes() Resource[*corev1.Node, *corev1.NodeList] {
	return resource[*corev1.Node, *corev1.NodeList](c.rc, corePrefix, "nodes", "")
}

// Services returns the client of the Services of namespace ns.
func (c CoreV1) Services(ns string) Resource[*corev1.Service, *corev1.ServiceList] {
	return resource[*corev1.Service, *corev1.ServiceList](c.rc, corePrefix, "services", ns)
}

// ServiceAccounts returns the client of the service accounts of namespace ns.
func (c CoreV1) ServiceAccounts(ns string) Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList] {
	return resource[*corev1.ServiceAccount, *corev1.ServiceAccountList](c.rc, corePrefix, "serviceaccounts", ns)
}

// Secrets returns the client of the Secrets of namespace ns.
func (c CoreV1) Secrets(ns string) Resource[*corev1.Secret, *corev1.SecretList] {
	return resource[*corev1.Secret, *corev1.SecretList](c.rc, corePrefix, "secrets", ns)
}

// Events returns the client of the events of namespace ns.
func (c CoreV1) Events(ns string) Resource[*corev1.Event, *corev1.EventList] {
	return resource[*corev1.Event, *corev1.EventList](c.rc, corePrefix, "events", ns)
}

// Pods is the client of the pods of a namespace: a Resource, and their logs.
type Pods struct {
	Resource[*corev1.Pod, *corev1.PodList]
}

// LogRequest is the request of a pod's logs.
type LogRequest struct {
	rc  *rest.Client
	req rest.Request
}

// GetLogs returns the request of the logs of pod name (DoRaw reads them,
// Stream follows them with opts.Follow).
func (p Pods) GetLogs(name string, opts *corev1.PodLogOptions) LogRequest {
	q := map[string][]string{}
	add := func(k, v string) { q[k] = []string{v} }
	if opts.Container != "" {
		add("container", opts.Container)
	}
	if opts.Follow {
		add("follow", "true")
	}
	if opts.Previous {
		add("previous", "true")
	}
	if opts.Timestamps {
		add("timestamps", "true")
	}
	for k, v := range map[string]*int64{"sinceSeconds": opts.SinceSeconds, "tailLines": opts.TailLines, "limitBytes": opts.LimitBytes} {
		if v != nil {
			add(k, fmt.Sprint(*v))
		}
	}
	return LogRequest{rc: p.rc, req: rest.Request{Method: http.MethodGet, Path: p.path(name, "log"), Query: q}}
}

// DoRaw returns the logs.
func (r LogRequest) DoRaw(ctx context.Context) ([]byte, error) {
	body, err := r.rc.Stream(ctx, r.req)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return io.ReadAll(body)
}

// Stream returns the logs as a stream, for the caller to read and close.
func (r LogRequest) Stream(ctx context.Context) (io.ReadCloser, error) {
	return r.rc.Stream(ctx, r.req)
}

// AppsV1 is the client of group apps's kinds.
type AppsV1 struct{ rc *rest.Client }

// Deployments returns the client of the Deployments of namespace ns.
func (c AppsV1) Deployments(ns string) Resource[*appsv1.Deployment, *appsv1.DeploymentList] {
	return resource[*appsv1.Deployment, *appsv1.DeploymentList](c.rc, appsPrefix, "deployments", ns)
}

// StatefulSets returns the client of the StatefulSets of namespace ns.
func (c AppsV1) StatefulSets(ns string) Resource[*appsv1.StatefulSet, *appsv1.StatefulSetList] {
	return resource[*appsv1.StatefulSet, *appsv1.StatefulSetList](c.rc, appsPrefix, "statefulsets", ns)
}

// DaemonSets returns the client of the DaemonSets of namespace ns.
func (c AppsV1) DaemonSets(ns string) Resource[*appsv1.DaemonSet, *appsv1.DaemonSetList] {
	return resource[*appsv1.DaemonSet, *appsv1.DaemonSetList](c.rc, appsPrefix, "daemonsets", ns)
}

// ReplicaSets returns the client of the ReplicaSets of namespace ns.
func (c AppsV1) ReplicaSets(ns string) Resource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList] {
	return resource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](c.rc, appsPrefix, "replicasets", ns)
}

// BatchV1 is the client of group batch's kinds.
type BatchV1 struct{ rc *rest.Client }

// Jobs returns the client of the Jobs of namespace ns.
func (c BatchV1) Jobs(ns string) Resource[*batchv1.Job, *batchv1.JobList] {
	return resource[*batchv1.Job, *batchv1.JobList](c.rc, batchPrefix, "jobs", ns)
}

// DiscoveryV1 is the client of group discovery.k8s.io's kinds.
type DiscoveryV1 struct{ rc *rest.Client }

// EndpointSlices returns the client of the EndpointSlices of namespace ns.
func (c DiscoveryV1) EndpointSlices(ns string) Resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList] {
	return resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList](c.rc, discoveryPrefix, "endpointslices", ns)
}

// Resource is the client of one kind of object, T (*corev1.Pod), and its
// list, L (*corev1.PodList), in one namespace ("" for cluster-scoped
// kinds): the requests of client-go's typed clients, in JSON. T and L are
// pointers so that the compiler makes one copy of each method for every
// kind (one GC shape), not one per kind in every package that uses it.
type Resource[T, L any] struct {
	rc       *rest.Client
	prefix   string
	resource string
	ns       string
}

func (r Resource[T, L]) path(name string, sub ...string) rest.Path {
	p := rest.Path{Prefix: r.prefix, Namespace: r.ns, Resource: r.resource, Name: name}
	if len(sub) > 0 {
		p.Subresource = sub[0]
	}
	return p
}

// newOf returns a new object of type T, a pointer to an API kind.
func newOf[T any]() T {
	return reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
}

// Get returns object name.
func (r Resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := newOf[T]()
	err := r.rc.Do(ctx, rest.Request{Method: http.MethodGet, Path: r.path(name), Query: opts.Query()}, out)
	return out, err
}

// List returns the objects opts selects.
func (r Resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := newOf[L]()
	err := r.rc.Do(ctx, rest.Request{Method: http.MethodGet, Path: r.path(""), Query: opts.Query(), Timeout: timeout(opts)}, out)
	return out, err
}

// Watch watches the objects opts selects: the events' objects are T.
func (r Resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.rc.Watch(ctx, rest.Request{Method: http.MethodGet, Path: r.path(""), Query: opts.Query()},
		func() any { return newOf[T]() })
}

// Create creates o and returns it as the server made it.
func (r Resource[T, L]) Create(ctx context.Context, o T, opts metav1.CreateOptions) (T, error) {
	out := newOf[T]()
	err := r.rc.Do(ctx, rest.Request{Method: http.MethodPost, Path: r.path(""), Query: opts.Query(), Body: o}, out)
	return out, err
}

// Delete deletes object name.
func (r Resource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	opts.Kind, opts.APIVersion = "DeleteOptions", "v1"
	return r.rc.Do(ctx, rest.Request{Method: http.MethodDelete, Path: r.path(name), Body: &opts}, nil)
}

// Patch patches object name (or its subresource) with data, a patch of
// type pt, and returns it as the server made it. There is no Update: the
// API types hold only the fields llmchaos uses, so a whole object written
// back would drop the others.
func (r Resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	out := newOf[T]()
	err := r.rc.Do(ctx, rest.Request{Method: http.MethodPatch, Path: r.path(name, subresources...), Query: opts.Query(),
		Body: data, ContentType: string(pt)}, out)
	return out, err
}

// ListWatch returns the lister and watcher of r's objects, with tweak
// (when not nil) setting the selectors of each list and watch.
func (r Resource[T, L]) ListWatch(tweak func(*metav1.ListOptions)) cache.ListerWatcher {
	return cache.ListWatch{
		ListFunc: func(ctx context.Context, opts metav1.ListOptions) ([]cache.Object, string, error) {
			if tweak != nil {
				tweak(&opts)
			}
			list, err := r.List(ctx, opts)
			if err != nil {
				return nil, "", err
			}
			return listItems(list)
		},
		WatchFunc: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if tweak != nil {
				tweak(&opts)
			}
			return r.Watch(ctx, opts)
		},
	}
}

// listItems returns pointers to the Items of list (a *XList) and its
// resource version.
func listItems(list any) ([]cache.Object, string, error) {
	v := reflect.ValueOf(list).Elem()
	items := v.FieldByName("Items")
	meta, ok := v.FieldByName("ListMeta").Interface().(metav1.ListMeta)
	if !items.IsValid() || items.Kind() != reflect.Slice || !ok {
		return nil, "", fmt.Errorf("a %T is not a list", list)
	}
	out := make([]cache.Object, items.Len())
	for i := range out {
		o, ok := items.Index(i).Addr().Interface().(cache.Object)
		if !ok {
			return nil, "", fmt.Errorf("items of a %T are not objects", list)
		}
		out[i] = o
	}
	return out, meta.ResourceVersion, nil
}

func timeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
