package kube

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Clientset is llmchaos's typed client of the Kubernetes API: the four API
// groups it uses (core, apps, batch, discovery.k8s.io), every kind through
// one generic Resource, with the calls of client-go's typed clients
// (CoreV1().Pods(ns).List(ctx, opts), ...). client-go's own Clientset
// compiles every group Kubernetes serves (57 of them, with their typed
// clients and apply configurations), which made up a large part of the
// first build of llmchaos for the handful it uses. Safe for concurrent use.
type Clientset struct {
	core, apps, batch, discovery rest.Interface
}

// scheme knows the kinds of the groups Clientset reaches, and the options
// (ListOptions, ...) of each group version.
var (
	scheme         = newScheme()
	codecs         = serializer.NewCodecFactory(scheme)
	parameterCodec = runtime.NewParameterCodec(scheme)
)

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, discoveryv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err) // the API types' own registration: a broken dependency
		}
	}
	return s
}

// NewClientset returns the clientset of cfg. Its groups share one HTTP
// client and, unless cfg has one, one rate limiter of cfg.QPS and
// cfg.Burst, as client-go's kubernetes.NewForConfig shares them.
func NewClientset(cfg *rest.Config) (*Clientset, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if cfg.RateLimiter == nil && cfg.QPS > 0 {
		if cfg.Burst <= 0 {
			return nil, fmt.Errorf("burst must be above 0 when QPS is set (QPS %v, burst %d)", cfg.QPS, cfg.Burst)
		}
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	var c Clientset
	for _, g := range []struct {
		client  *rest.Interface
		apiPath string
		gv      schema.GroupVersion
	}{
		{&c.core, "/api", corev1.SchemeGroupVersion},
		{&c.apps, "/apis", appsv1.SchemeGroupVersion},
		{&c.batch, "/apis", batchv1.SchemeGroupVersion},
		{&c.discovery, "/apis", discoveryv1.SchemeGroupVersion},
	} {
		if *g.client, err = groupClient(cfg, hc, g.apiPath, g.gv); err != nil {
			return nil, fmt.Errorf("%s client: %w", g.gv, err)
		}
	}
	return &c, nil
}

func groupClient(cfg *rest.Config, hc *http.Client, apiPath string, gv schema.GroupVersion) (rest.Interface, error) {
	gc := *cfg
	gc.GroupVersion = &gv
	gc.APIPath = apiPath
	gc.NegotiatedSerializer = codecs.WithoutConversion()
	return rest.RESTClientForConfigAndClient(&gc, hc)
}

// CoreV1 returns the client of the core group.
func (c *Clientset) CoreV1() CoreV1 { return CoreV1{c.core} }

// AppsV1 returns the client of group apps.
func (c *Clientset) AppsV1() AppsV1 { return AppsV1{c.apps} }

// BatchV1 returns the client of group batch.
func (c *Clientset) BatchV1() BatchV1 { return BatchV1{c.batch} }

// DiscoveryV1 returns the client of group discovery.k8s.io.
func (c *Clientset) DiscoveryV1() DiscoveryV1 { return DiscoveryV1{c.discovery} }

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
	err := c.core.Get().AbsPath(path).Do(ctx).Into(list)
	if err != nil {
		return nil, err
	}
	list.GroupVersion = gv // as client-go's discovery sets it, whatever the server said
	return list, nil
}

// CoreV1 is the client of the core group's kinds.
type CoreV1 struct{ rc rest.Interface }

// RESTClient returns the group's REST client, for cache.ListWatch.
func (c CoreV1) RESTClient() rest.Interface { return c.rc }

// Pods returns the client of the pods of namespace ns.
func (c CoreV1) Pods(ns string) Pods {
	return Pods{Resource[*corev1.Pod, *corev1.PodList]{c.rc, "pods", ns}}
}

// Namespaces returns the client of namespaces.
func (c CoreV1) Namespaces() Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return Resource[*corev1.Namespace, *corev1.NamespaceList]{c.rc, "namespaces", ""}
}

// Nodes returns the client of nodes.
func (c CoreV1) Nodes() Resource[*corev1.Node, *corev1.NodeList] {
	return Resource[*corev1.Node, *corev1.NodeList]{c.rc, "nodes", ""}
}

// Services returns the client of the Services of namespace ns.
func (c CoreV1) Services(ns string) Resource[*corev1.Service, *corev1.ServiceList] {
	return Resource[*corev1.Service, *corev1.ServiceList]{c.rc, "services", ns}
}

// ServiceAccounts returns the client of the service accounts of namespace ns.
func (c CoreV1) ServiceAccounts(ns string) Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList] {
	return Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList]{c.rc, "serviceaccounts", ns}
}

// Secrets returns the client of the Secrets of namespace ns.
func (c CoreV1) Secrets(ns string) Resource[*corev1.Secret, *corev1.SecretList] {
	return Resource[*corev1.Secret, *corev1.SecretList]{c.rc, "secrets", ns}
}

// Events returns the client of the events of namespace ns.
func (c CoreV1) Events(ns string) Resource[*corev1.Event, *corev1.EventList] {
	return Resource[*corev1.Event, *corev1.EventList]{c.rc, "events", ns}
}

// Pods is the client of the pods of a namespace: a Resource, and their logs.
type Pods struct {
	Resource[*corev1.Pod, *corev1.PodList]
}

// GetLogs returns the request of the logs of pod name (DoRaw reads them,
// Stream follows them with opts.Follow).
func (p Pods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return p.rc.Get().Namespace(p.ns).Name(name).Resource("pods").SubResource("log").VersionedParams(opts, parameterCodec)
}

// AppsV1 is the client of group apps's kinds.
type AppsV1 struct{ rc rest.Interface }

// Deployments returns the client of the Deployments of namespace ns.
func (c AppsV1) Deployments(ns string) Resource[*appsv1.Deployment, *appsv1.DeploymentList] {
	return Resource[*appsv1.Deployment, *appsv1.DeploymentList]{c.rc, "deployments", ns}
}

// StatefulSets returns the client of the StatefulSets of namespace ns.
func (c AppsV1) StatefulSets(ns string) Resource[*appsv1.StatefulSet, *appsv1.StatefulSetList] {
	return Resource[*appsv1.StatefulSet, *appsv1.StatefulSetList]{c.rc, "statefulsets", ns}
}

// DaemonSets returns the client of the DaemonSets of namespace ns.
func (c AppsV1) DaemonSets(ns string) Resource[*appsv1.DaemonSet, *appsv1.DaemonSetList] {
	return Resource[*appsv1.DaemonSet, *appsv1.DaemonSetList]{c.rc, "daemonsets", ns}
}

// ReplicaSets returns the client of the ReplicaSets of namespace ns.
func (c AppsV1) ReplicaSets(ns string) Resource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList] {
	return Resource[*appsv1.ReplicaSet, *appsv1.ReplicaSetList]{c.rc, "replicasets", ns}
}

// BatchV1 is the client of group batch's kinds.
type BatchV1 struct{ rc rest.Interface }

// Jobs returns the client of the Jobs of namespace ns.
func (c BatchV1) Jobs(ns string) Resource[*batchv1.Job, *batchv1.JobList] {
	return Resource[*batchv1.Job, *batchv1.JobList]{c.rc, "jobs", ns}
}

// DiscoveryV1 is the client of group discovery.k8s.io's kinds.
type DiscoveryV1 struct{ rc rest.Interface }

// RESTClient returns the group's REST client, for cache.ListWatch.
func (c DiscoveryV1) RESTClient() rest.Interface { return c.rc }

// EndpointSlices returns the client of the EndpointSlices of namespace ns.
func (c DiscoveryV1) EndpointSlices(ns string) Resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList] {
	return Resource[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList]{c.rc, "endpointslices", ns}
}

// Resource is the client of one kind of object, T (*corev1.Pod), and its
// list, L (*corev1.PodList), in one namespace ("" for cluster-scoped
// kinds): the requests of client-go's typed clients, in Protobuf, which
// every built-in kind speaks. T and L are pointers so that the compiler
// makes one copy of each method for every kind (one GC shape), not one per
// kind in every package that uses it.
type Resource[T, L runtime.Object] struct {
	rc       rest.Interface
	resource string
	ns       string
}

func (r Resource[T, L]) req(verb string) *rest.Request {
	return r.rc.Verb(verb).UseProtobufAsDefault().NamespaceIfScoped(r.ns, r.ns != "").Resource(r.resource)
}

// newOf returns a new object of type T, a pointer to an API kind.
func newOf[T runtime.Object]() T {
	return reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
}

// Get returns object name.
func (r Resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := newOf[T]()
	err := r.req(http.MethodGet).Name(name).VersionedParams(&opts, parameterCodec).Do(ctx).Into(out)
	return out, err
}

// List returns the objects opts selects.
func (r Resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := newOf[L]()
	err := r.req(http.MethodGet).VersionedParams(&opts, parameterCodec).Timeout(timeout(opts)).Do(ctx).Into(out)
	return out, err
}

// Watch watches the objects opts selects.
func (r Resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.req(http.MethodGet).VersionedParams(&opts, parameterCodec).Timeout(timeout(opts)).Watch(ctx)
}

// Create creates o and returns it as the server made it.
func (r Resource[T, L]) Create(ctx context.Context, o T, opts metav1.CreateOptions) (T, error) {
	out := newOf[T]()
	err := r.req(http.MethodPost).VersionedParams(&opts, parameterCodec).Body(o).Do(ctx).Into(out)
	return out, err
}

// Update replaces o (by its name) and returns it as the server made it.
func (r Resource[T, L]) Update(ctx context.Context, o T, opts metav1.UpdateOptions) (T, error) {
	return r.put(ctx, o, opts)
}

// UpdateStatus replaces the status of o (by its name) and returns o as the
// server made it.
func (r Resource[T, L]) UpdateStatus(ctx context.Context, o T, opts metav1.UpdateOptions) (T, error) {
	return r.put(ctx, o, opts, "status")
}

func (r Resource[T, L]) put(ctx context.Context, o T, opts metav1.UpdateOptions, sub ...string) (T, error) {
	out := newOf[T]()
	err := r.req(http.MethodPut).Name(any(o).(metav1.Object).GetName()).SubResource(sub...).
		VersionedParams(&opts, parameterCodec).Body(o).Do(ctx).Into(out)
	return out, err
}

// Delete deletes object name.
func (r Resource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.req(http.MethodDelete).Name(name).Body(&opts).Do(ctx).Error()
}

// Patch patches object name (or its subresources) with data, a patch of
// type pt, and returns it as the server made it.
func (r Resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	out := newOf[T]()
	err := r.rc.Patch(pt).NamespaceIfScoped(r.ns, r.ns != "").Resource(r.resource).Name(name).SubResource(subresources...).
		VersionedParams(&opts, parameterCodec).Body(data).Do(ctx).Into(out)
	return out, err
}

func timeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
