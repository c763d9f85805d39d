package experiments

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/replica"
	"github.com/llmchaos/llmchaos/internal/kube"
)

// DryRunRefusedError is what a dry run returns, after writing the whole plan,
// when a fault would be refused if the run started now: its pods have not
// opted in, or its selection would break min_available with the pods Ready
// now. The run would not test it (llmchaos run exits 95).
type DryRunRefusedError struct {
	// Faults names the refused faults; Errs says why, one per fault.
	Faults []string
	Errs   []error
}

// Error names the refused faults and why.
func (e *DryRunRefusedError) Error() string {
	parts := make([]string, len(e.Faults))
	for i, f := range e.Faults {
		parts[i] = fmt.Sprintf("fault %q: %v", f, e.Errs[i])
	}
	return "would be refused: " + strings.Join(parts, "; ")
}

// Unwrap returns why each fault would be refused.
func (e *DryRunRefusedError) Unwrap() []error { return e.Errs }

// writeKubernetesTarget writes a target.kubernetes: where its endpoints
// come from, and those ready now when the cluster answers.
func (p *plan) writeKubernetesTarget(b *strings.Builder, t spec.KubernetesTarget) {
	cluster := "the current context of $KUBECONFIG or ~/.kube/config (in a pod: its service account)"
	switch {
	case t.Kubeconfig != "" && t.Context != "":
		cluster = fmt.Sprintf("context %s of %s", t.Context, t.Kubeconfig)
	case t.Kubeconfig != "":
		cluster = "the current context of " + t.Kubeconfig
	case t.Context != "":
		cluster = "context " + t.Context
	}
	k, err := connectKube(t)
	ns := t.Namespace
	if ns == "" {
		ns = "(the context's namespace)"
		if err == nil {
			ns = k.ns + " (the context's)"
		}
	}
	fmt.Fprintf(b, "  Kubernetes pods %q in namespace %s, cluster: %s\n", t.Selector, ns, cluster)
	if err != nil {
		fmt.Fprintf(b, "    cannot reach it now: %v\n", err)
	}
	if t.URL != "" {
		fmt.Fprintf(b, "  every request goes to %s; the replica faults and the events act on the pods\n", t.URL)
	} else {
		src := fmt.Sprintf("the Ready pods' IPs on port %d", t.Port)
		if t.Service != "" {
			src = "the ready addresses of Service " + t.Service + "'s EndpointSlices"
			if t.Port != 0 {
				src += fmt.Sprintf(" on port %d", t.Port)
			}
		}
		fmt.Fprintf(b, "  endpoints: %s, path %s, followed while the run goes on (round-robin over those ready at each send); results carry their pod's name as endpoint tag\n", src, t.Path)
		if err == nil {
			p.writeKubernetesEndpoints(b, k)
		}
	}
	model := t.Model
	if model == "" {
		model = "(the first model GET /models lists)"
	}
	fmt.Fprintf(b, "  model %s\n", model)
}

// writeKubernetesEndpoints writes the endpoints ready now.
func (p *plan) writeKubernetesEndpoints(b *strings.Builder, k *kubeTarget) {
	ctx, cancel := context.WithTimeout(context.Background(), previewTimeout)
	defer cancel()
	d := k.discovery()
	var (
		eps     []kube.Endpoint
		problem error
	)
	listed := make(chan struct{})
	err := d.Watch(ctx, nil, func(e []kube.Endpoint, perr error) {
		eps, problem = e, perr
		select {
		case <-listed:
		default:
			close(listed)
			cancel()
		}
	})
	switch {
	case err != nil:
		fmt.Fprintf(b, "    cannot list them now: %v\n", err)
	case len(eps) == 0:
		fmt.Fprintf(b, "    none is ready now: the run would fail to start\n")
	default:
		for _, e := range eps {
			fmt.Fprintf(b, "    ready now: %s\n", k.router.BaseURL(e))
		}
	}
	if problem != nil {
		fmt.Fprintf(b, "    %v\n", problem)
	}
}

// writeKubernetesPods writes the pods a kubernetes-driver fault matches now
// and which its selection would pick among them with its seed, or why it
// would be refused (returned, for DryRunRefusedError).
func writeKubernetesPods(b *strings.Builder, pf *plannedFault, t replica.TargetParams, sel faults.Selection) error {
	ctx, cancel := context.WithTimeout(context.Background(), previewTimeout)
	defer cancel()
	ts, err := replica.Preview(ctx, t)
	if errors.Is(err, replica.ErrNotOptedIn) {
		fmt.Fprintf(b, "    REFUSED: %v\n", err)
		return err
	}
	if err != nil {
		fmt.Fprintf(b, "    cannot list them now: %v\n", err)
		return nil
	}
	ready := 0
	for _, tg := range ts {
		if tg.Up {
			ready++
		}
		fmt.Fprintf(b, "    %s\n", tg)
	}
	fmt.Fprintf(b, "    %d match, %d Ready\n", len(ts), ready)
	fmt.Fprintf(b, "    %s\n", selectionText(sel, "pods Ready"))
	picked, err := faults.Choose(sel, faults.BuildEnv{Seed: pf.seed}.Rand(), ts, func(t replica.Target) bool { return t.Up })
	if err != nil {
		fmt.Fprintf(b, "    REFUSED now: %v\n", err)
		return err
	}
	names := make([]string, len(picked))
	for i, tg := range picked {
		names[i] = tg.ID
	}
	what := "would be deleted"
	if pf.spec.Type == replica.TypeRestart {
		what = "would have their Deployment, StatefulSet or DaemonSet restarted"
	}
	fmt.Fprintf(b, "    %s %s if the run started now\n", strings.Join(names, ", "), what)
	return nil
}
