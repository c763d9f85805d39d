package shardjob

import (
	"context"
	"fmt"

	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
	"github.com/llmchaos/llmchaos/internal/kube/apierrors"
)

// CheckServiceAccount returns an error saying what to do when service
// account name does not exist in namespace ns: the Job controller could
// not create the shard pods, and the Job would wait for them forever.
func CheckServiceAccount(ctx context.Context, client *kube.Clientset, ns, name string) error {
	_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("service account %s/%s of the shard pods does not exist (the Job could not create them): create it (deploy/kubernetes's rbac.yaml makes %s, which may list and watch pods and EndpointSlices, as shards that follow a Kubernetes target's pods need) or name another", ns, name, DefaultPodServiceAccount)
	case err != nil:
		return fmt.Errorf("service account %s/%s of the shard pods: %w", ns, name, err)
	}
	return nil
}
