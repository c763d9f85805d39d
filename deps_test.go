package llmchaos_test

import (
	"os/exec"
	"strings"
	"testing"
)

// replaced are modules the binary once compiled and no longer does, each
// for a few calls that llmchaos now makes itself (docs/development.md,
// Build time): a package that imports one again puts its tree back into
// every first build.
var replaced = []struct{ prefix, instead string }{
	{"github.com/moby/moby/", "internal/docker, the Engine API client of the docker replica driver"},
	{"github.com/docker/", "internal/docker, the Engine API client of the docker replica driver"},
	{"go.opentelemetry.io/otel", "nothing: the moby client's HTTP instrumentation brought it"},
	{"go.opentelemetry.io/contrib/", "nothing: the moby client's HTTP instrumentation brought it"},
	{"github.com/jackc/pgx/", "github.com/lib/pq, the history's PostgreSQL driver"},
	{"gonum.org/v1/plot", "report/svgchart.go, which draws the report's plots"},
	{"k8s.io/", "internal/kube (its own API types, REST client, informer and dynamic client)"},
	{"sigs.k8s.io/", "internal/kube: the Kubernetes client libraries brought it"},
	{"github.com/gogo/protobuf/", "nothing: the Kubernetes API types' Protobuf brought it"},
	{"golang.org/x/oauth2", "nothing: client-go's authentication plugins brought it"},
}

// TestBinaryLeavesOutWhatItReplaced: cmd/llmchaos depends on none of the
// modules in replaced (go list -deps).
func TestBinaryLeavesOutWhatItReplaced(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"/cmd/llmchaos").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, r := range replaced {
			if strings.HasPrefix(pkg, r.prefix) {
				t.Errorf("cmd/llmchaos depends on %s (go list -deps); use %s", pkg, r.instead)
			}
		}
	}
}
