package experiments

import (
	"context"
	"fmt"
	"strconv"

	"github.com/llmchaos/llmchaos/experiments/shardjob"
)

// followsPods reports whether the load goes to the pods of the
// target.kubernetes themselves (no url): then every shard follows them
// itself (llmchaos load --kubernetes-*), as the runner's own load does,
// so that a pod killed during the run stops getting requests and its
// replacement gets its share.
func (r *run) followsPods() bool { return r.kube != nil && r.kube.t.URL == "" }

// shardKubeArgs are the `llmchaos load` flags of the target's pods: where
// they are and, for shards that do not run in the cluster, how this
// process reached it.
func (r *run) shardKubeArgs() []string {
	t := r.kube.t
	a := []string{"--kubernetes-namespace", r.kube.ns, "--kubernetes-selector", t.Selector}
	if t.Service != "" {
		a = append(a, "--kubernetes-service", t.Service)
	}
	if t.Port != 0 {
		a = append(a, "--kubernetes-port", strconv.Itoa(t.Port))
	}
	a = append(a, "--kubernetes-path", t.Path)
	if !r.shardsInCluster() {
		if t.Kubeconfig != "" {
			a = append(a, "--kubeconfig", t.Kubeconfig)
		}
		if t.Context != "" {
			a = append(a, "--kube-context", t.Context)
		}
	}
	return a
}

// inCluster is implemented by a ShardRunner whose shards run in the
// target's cluster: they reach its API with their pod's service account,
// not with this machine's kubeconfig.
type inCluster interface {
	InCluster() bool
}

// InCluster reports that the shards are pods of the cluster.
func (k *KubernetesShards) InCluster() bool { return true }

var _ inCluster = (*KubernetesShards)(nil)

// shardsInCluster reports whether the shards run as pods of the target's
// cluster: the runner's own Job (no Options.Shards), or a ShardRunner that
// says so; else (LocalShards) they run here, with this machine's
// kubeconfig.
func (r *run) shardsInCluster() bool {
	if r.opts.Shards == nil {
		return true
	}
	ic, ok := r.opts.Shards.(inCluster)
	return ok && ic.InCluster()
}

// shardServiceAccount returns the service account of the shard pods:
// Options.ShardServiceAccount, else, when they follow the target's pods,
// shardjob.DefaultPodServiceAccount; it checks that the account exists
// (the Job would wait forever for pods it cannot create).
func (r *run) shardServiceAccount(ctx context.Context) (string, error) {
	sa := r.opts.ShardServiceAccount
	if sa == "" && r.followsPods() {
		sa = shardjob.DefaultPodServiceAccount
	}
	if sa == "" {
		return "", nil
	}
	if err := shardjob.CheckServiceAccount(ctx, r.kube.cl.Client, r.kube.ns, sa); err != nil {
		return "", fmt.Errorf("workload.shards: %w (llmchaos run --shard-service-account)", err)
	}
	return sa, nil
}
