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
	{"github.com/prometheus/", "internal/promexpo: the registry, exposition formats, handler and text parser"},
	{"go.opentelemetry.io/proto/", "telemetry/tracing/otlp.go, which encodes the OTLP request with protowire"},
}

// protowireOnly: of google.golang.org/protobuf, the binary may compile
// encoding/protowire (remote write, the protobuf exposition, OTLP) and
// the packages protowire itself imports; anything else is the protobuf
// runtime, which the generated message types bring.
var protowireOnly = map[string]bool{
	"google.golang.org/protobuf/encoding/protowire": true,
	"google.golang.org/protobuf/internal/detrand":   true,
	"google.golang.org/protobuf/internal/errors":    true,
}

// TestBinaryLeavesOutWhatItReplaced: cmd/llmchaos depends on none of the
// modules in replaced, and on no protobuf package beyond protowireOnly
// (go list -deps).
func TestBinaryLeavesOutWhatItReplaced(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"/cmd/llmchaos").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "google.golang.org/protobuf/") && !protowireOnly[pkg] {
			t.Errorf("cmd/llmchaos depends on %s (go list -deps); encode with protowire alone", pkg)
		}
		for _, r := range replaced {
			if strings.HasPrefix(pkg, r.prefix) {
				t.Errorf("cmd/llmchaos depends on %s (go list -deps); use %s", pkg, r.instead)
			}
		}
	}
}
