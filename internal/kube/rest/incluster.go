package rest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// ServiceAccountDir is where Kubernetes mounts a pod's service account.
const ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// ErrNotInCluster is wrapped by InClusterConfig's error outside a pod.
var ErrNotInCluster = errors.New("not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not both set")

// InClusterConfig returns the configuration of a pod's service account:
// the API server of KUBERNETES_SERVICE_HOST and _PORT, the service
// account's token (read again as it is rotated) and CA from dir (""
// for ServiceAccountDir).
func InClusterConfig(dir string) (*Config, error) {
	if dir == "" {
		dir = ServiceAccountDir
	}
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, ErrNotInCluster
	}
	tokenFile := filepath.Join(dir, "token")
	if _, err := os.Stat(tokenFile); err != nil {
		return nil, fmt.Errorf("service account token: %w", err)
	}
	ca := filepath.Join(dir, "ca.crt")
	if _, err := os.Stat(ca); err != nil {
		return nil, fmt.Errorf("service account CA: %w", err)
	}
	return &Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		TLSClientConfig: TLSClientConfig{CAFile: ca},
		BearerTokenFile: tokenFile,
	}, nil
}
