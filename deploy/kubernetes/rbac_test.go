package kubernetes_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/faults/chaosmesh"
	"github.com/llmchaos/llmchaos/faults/gpupod"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"github.com/llmchaos/llmchaos/internal/kube"
)

// serviceAccount is the user the tool runs as in the cluster;
// loadServiceAccount the one of the shard pods that follow the target's
// pods.
const (
	serviceAccount     = "system:serviceaccount:" + namespace + ":llmchaos"
	loadServiceAccount = "system:serviceaccount:" + namespace + ":" + shardjob.DefaultPodServiceAccount
)

// toolCalls returns every API call llmchaos makes, from the lists kept
// next to the clients.
func toolCalls() []kube.APICall {
	return slices.Concat(kube.APICalls(), replica.APICalls(), chaosmesh.APICalls(), gpupod.APICalls(), shardjob.APICalls())
}

// callKey is a call as RBAC sees it.
type callKey struct{ group, resource, verb string }

func (k callKey) String() string {
	if k.group == "" {
		return k.verb + " " + k.resource
	}
	return k.verb + " " + k.resource + "." + k.group
}

func keyOf(c kube.APICall) callKey {
	r := c.Resource
	if c.Subresource != "" {
		r += "/" + c.Subresource
	}
	return callKey{c.Group, r, c.Verb}
}

// ruleKeys returns what the rules of the rendered Role (or ClusterRole)
// name grant, one key per group × resource × verb.
func ruleKeys(t *testing.T, role *unstructured.Unstructured) map[callKey]bool {
	t.Helper()
	rules, _, err := unstructured.NestedSlice(role.Object, "rules")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[callKey]bool{}
	for _, r := range rules {
		rule := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
		for _, g := range groups {
			for _, res := range resources {
				for _, v := range verbs {
					if g == "*" || res == "*" || v == "*" {
						t.Errorf("%s grants a wildcard (%q %q %q)", role.GetName(), g, res, v)
					}
					keys[callKey{g, res, v}] = true
				}
			}
		}
	}
	return keys
}

// TestRBACGrantsExactlyTheCallsTheToolMakes: the Role grants every
// namespaced call of toolCalls and nothing else, and the ClusterRole every
// cluster-scoped one and nothing else; the shard pods' Role grants the
// calls of a shard that follows the target's pods and nothing else.
func TestRBACGrantsExactlyTheCallsTheToolMakes(t *testing.T) {
	objs := render(t)
	for _, tt := range []struct {
		kind, name string
		cluster    bool
		calls      []kube.APICall
	}{
		{"Role", "llmchaos", false, toolCalls()},
		{"ClusterRole", "llmchaos-target-namespaces", true, toolCalls()},
		{"Role", shardjob.DefaultPodServiceAccount, false, shardjob.PodAPICalls()},
	} {
		granted := ruleKeys(t, find(t, objs, tt.kind, tt.name))
		used := map[callKey]bool{}
		for _, c := range tt.calls {
			if c.ClusterScoped == tt.cluster {
				used[keyOf(c)] = true
			}
		}
		for k := range used {
			if !granted[k] {
				t.Errorf("%s %s does not grant %s, which the tool makes", tt.kind, tt.name, k)
			}
		}
		for k := range granted {
			if !used[k] {
				t.Errorf("%s %s grants %s, which no package lists among its API calls", tt.kind, tt.name, k)
			}
		}
	}
}

// TestServiceAccountMayMakeEachCallAndNoOther asks the control plane's
// authorizer (SubjectAccessReview), once deploy/kubernetes is applied,
// whether the service account may make each call of toolCalls in the
// namespace (each is allowed) and calls the tool never makes (each is
// denied); and it impersonates the account for a call of each kind, so
// that the answers are those the API server enforces.
func TestServiceAccountMayMakeEachCallAndNoOther(t *testing.T) {
	c := k8stest.Start(t)
	apply(t, c, render(t))
	admin := c.Clientset(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	mayAs := func(user string, attrs authorizationv1.ResourceAttributes) (bool, string) {
		sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               user,
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
				ResourceAttributes: &attrs,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed, sar.Status.Reason
	}
	may := func(attrs authorizationv1.ResourceAttributes) (bool, string) { return mayAs(serviceAccount, attrs) }
	for _, call := range toolCalls() {
		attrs := authorizationv1.ResourceAttributes{Namespace: namespace, Verb: call.Verb, Group: call.Group, Resource: call.Resource, Subresource: call.Subresource}
		if call.ClusterScoped {
			attrs.Namespace, attrs.Name = "", namespace
		}
		if ok, why := may(attrs); !ok {
			t.Errorf("%s in %s (%s): denied: %s", call, namespace, call.Why, why)
		}
	}
	denied := []struct {
		what  string
		attrs authorizationv1.ResourceAttributes
	}{
		{"read secrets", authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "get", Resource: "secrets"}},
		{"list secrets", authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "list", Resource: "secrets"}},
		{"delete deployments", authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "delete", Group: "apps", Resource: "deployments"}},
		{"scale deployments", authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "update", Group: "apps", Resource: "deployments", Subresource: "scale"}},
		{"update pods", authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "update", Resource: "pods"}},
		{"exec into pods", authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create", Resource: "pods", Subresource: "exec"}},
		{"add ephemeral containers", authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "patch", Resource: "pods", Subresource: "ephemeralcontainers"}},
		{"change the RBAC", authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "update", Group: "rbac.authorization.k8s.io", Resource: "roles"}},
		{"patch Chaos Mesh objects", authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "patch", Group: chaosmesh.Group, Resource: "networkchaos"}},
		{"Chaos Mesh kinds it does not make", authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create", Group: chaosmesh.Group, Resource: "iochaos"}},
		{"kill pods in another namespace", authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "delete", Resource: "pods"}},
		{"create Jobs in another namespace", authorizationv1.ResourceAttributes{Namespace: "default", Verb: "create", Group: "batch", Resource: "jobs"}},
		{"list namespaces", authorizationv1.ResourceAttributes{Verb: "list", Resource: "namespaces"}},
		{"read another namespace", authorizationv1.ResourceAttributes{Verb: "get", Resource: "namespaces", Name: "kube-system"}},
		{"label its namespace", authorizationv1.ResourceAttributes{Verb: "patch", Resource: "namespaces", Name: namespace}},
		{"read nodes", authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes"}},
	}
	for _, d := range denied {
		if ok, _ := may(d.attrs); ok {
			t.Errorf("%s (%s %s/%s in %q): allowed, want denied", d.what, d.attrs.Verb, d.attrs.Resource, d.attrs.Subresource, d.attrs.Namespace)
		}
	}

	// The shard pods' account: a shard's calls, and nothing the runner does.
	for _, call := range shardjob.PodAPICalls() {
		attrs := authorizationv1.ResourceAttributes{Namespace: namespace, Verb: call.Verb, Group: call.Group, Resource: call.Resource, Subresource: call.Subresource}
		if ok, why := mayAs(loadServiceAccount, attrs); !ok {
			t.Errorf("as %s, %s in %s (%s): denied: %s", loadServiceAccount, call, namespace, call.Why, why)
		}
	}
	for _, d := range []authorizationv1.ResourceAttributes{
		{Namespace: namespace, Verb: "get", Resource: "pods"},
		{Namespace: namespace, Verb: "delete", Resource: "pods"},
		{Namespace: namespace, Verb: "get", Resource: "pods", Subresource: "log"},
		{Namespace: namespace, Verb: "create", Group: "batch", Resource: "jobs"},
		{Namespace: namespace, Verb: "list", Resource: "secrets"},
		{Namespace: namespace, Verb: "get", Resource: "serviceaccounts"},
		{Namespace: "kube-system", Verb: "list", Resource: "pods"},
		{Verb: "get", Resource: "namespaces", Name: namespace},
	} {
		if ok, _ := mayAs(loadServiceAccount, d); ok {
			t.Errorf("as %s, %s %s/%s in %q: allowed, want denied", loadServiceAccount, d.Verb, d.Resource, d.Subresource, d.Namespace)
		}
	}

	// The same, enforced: as the service account.
	cfg := c.ClientGoConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccount, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("as %s, list pods: %v", serviceAccount, err)
	}
	if _, err := as.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); err != nil {
		t.Errorf("as %s, get namespace %s: %v", serviceAccount, namespace, err)
	}
	if _, err := as.BatchV1().Jobs(namespace).Get(ctx, "llmchaos-run", metav1.GetOptions{}); err != nil {
		t.Errorf("as %s, get the run Job: %v", serviceAccount, err)
	}
	for what, call := range map[string]func() error{
		"get secrets": func() error {
			_, err := as.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{})
			return err
		},
		"delete deployments": func() error {
			return as.AppsV1().Deployments(namespace).Delete(ctx, "sim", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		},
		"list pods of kube-system": func() error {
			_, err := as.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{})
			return err
		},
	} {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("as %s, %s: %v, want forbidden", serviceAccount, what, err)
		}
	}
	if t.Failed() {
		var calls []string
		for _, c := range toolCalls() {
			calls = append(calls, fmt.Sprintf("%s (%s)", c, c.Why))
		}
		t.Logf("the tool's calls:\n  %s", strings.Join(calls, "\n  "))
	}
}
