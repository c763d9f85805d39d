# llmchaos build, test and benchmark entry points. `make test` is what CI runs.
GO       ?= go
BIN      ?= bin/llmchaos
IMAGE    ?= llmchaos:dev
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
STATICCHECK_VERSION ?= v0.8.2

.PHONY: build test test-short test-k8s k8s-controlplane k8s-node test-node soak-shards k6-examples k6-docs lint bench soak-quickstart image clean

# build makes a static binary (no cgo) so that it runs FROM scratch.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/llmchaos

# Timing-accuracy tests skip themselves under -race (the detector's cost and
# other packages sharing the cores would be what they measure); they run
# again here without -race, one package at a time.
TIMING_TESTS := TestConstantModeGroundTruth|TestE2EClientTimingError|TestE2EEventLoopFidelity

# The history's statistics tests run on one goroutine, where the race
# detector finds nothing, and it slows them twentyfold (2 minutes of the
# race run): they skip themselves under -race, and the history package's
# tests all run here again without it (20 s; no list of names to keep).

# The tests that need a real Kubernetes node (names ending in OnARealNode)
# run last, on one node for all their packages (see test-node); go test
# ./... leaves them out, since each of its test binaries would start a node
# of its own. Where the node cannot start (not Linux, not root, not built)
# the runner says why and they are skipped, unless LLMCHAOS_REQUIRE_K8S_NODE=1
# (.ci/run), where that is a failure.
NODE_TEST_FLAGS = -race -count=1 -p 1 -timeout 20m -run OnARealNode

test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m -skip OnARealNode ./...
	$(GO) test -count=1 -p 1 -run '$(TIMING_TESTS)' -v ./sim/server/ ./xk6-llm/
	$(GO) test -count=1 ./history/
	$(GO) run ./internal/k8stest/nodetests -- $(NODE_TEST_FLAGS)

# The Kubernetes tests run against a real control plane (internal/k8stest)
# whose binaries are built once per version into $$HOME/.cache/llmchaos/k8s
# (about 10 CPU-minutes the first time, nothing after). `make test` runs
# them when it is built and skips them, saying so, when it is not; .ci/run
# builds it and sets LLMCHAOS_REQUIRE_K8S=1 so that they cannot skip there.
k8s-controlplane:
	scripts/k8s-controlplane.sh build

# test-k8s builds the control plane if needed and runs only the packages
# whose tests use it.
K8S_TEST_PKGS = ./internal/k8stest/ $(shell $(GO) list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... | awk '{ for (i = 2; i <= NF; i++) if ($$i ~ /\/internal\/k8stest$$/) { print $$1; break } }')
test-k8s: k8s-controlplane
	LLMCHAOS_REQUIRE_K8S=1 $(GO) test -race -count=1 -timeout 20m $(sort $(K8S_TEST_PKGS))

# k8s-node builds the real test node's kubelet (same version as the control
# plane) and installs Debian's containerd, runc and CNI plugins;
# test-node runs the tests that need it (internal/k8stest.StartNode: pods
# that run containers; their names end in OnARealNode), as root on Linux,
# failing where it cannot start. internal/k8stest/nodetests finds their
# packages, starts one node for all of them, runs them one package after
# another (-p 1: some use the fixed namespace llmchaos) with
# LLMCHAOS_K8S_NODE_DIR pointing at it, stops it and checks that the host
# is as it was. With -race as make test, so that its compiled packages are
# reused.
k8s-node: k8s-controlplane
	scripts/k8s-node.sh build

test-node: k8s-node
	LLMCHAOS_REQUIRE_K8S_NODE=1 $(GO) run ./internal/k8stest/nodetests -- $(NODE_TEST_FLAGS)

# k6-examples runs k6's own example scripts (the examples/ folder of a
# checkout of grafana/k6 at K6_REPO; AGPL, so none is kept here) through the
# binary called as k6 against local stand-ins of the hosts they name, each
# held to k6's exit code, checks, log lines and requests
# (cmd/llmchaos/k6examples_test.go). make test skips them without K6_REPO.
k6-examples:
	@test -n "$(K6_REPO)" || { echo "k6-examples: set K6_REPO to a checkout of grafana/k6" >&2; exit 2; }
	LLMCHAOS_K6_EXAMPLES=$(abspath $(K6_REPO))/examples $(GO) test -count=1 -timeout 20m \
		-run '^(TestK6RepositoryExamplesRunAsInK6|TestK6EndlessLoopExampleEndsOnCtrlC)$$' -v ./cmd/llmchaos/

# k6-docs runs every code block of k6's documentation (the current
# version's under a checkout of grafana/k6-docs at K6_DOCS; the docs carry
# no licence, so none is kept here) that is a whole script importing only
# modules llmchaos has, through the binary called as k6 against the same
# stand-in, and prints passes and failures by class
# (cmd/llmchaos/k6docblocks_test.go). make test skips it without K6_DOCS.
k6-docs:
	@test -n "$(K6_DOCS)" || { echo "k6-docs: set K6_DOCS to a checkout of grafana/k6-docs" >&2; exit 2; }
	LLMCHAOS_K6_DOCS=$(abspath $(K6_DOCS)) $(GO) test -count=1 -timeout 30m -parallel 4 \
		-run '^TestK6DocsBlocksRunAsInK6$$' -v ./cmd/llmchaos/

# soak-shards runs the sharded load on the real node (3 shard pods of an
# Indexed Job, their reports read back from the pods' logs) SOAK_N times
# on one node and fails if a single shard's report is lost.
soak-shards: k8s-node
	LLMCHAOS_REQUIRE_K8S_NODE=1 $(GO) test -count=$(SOAK_N) -timeout 60m -run '^TestRunShardedLoadOnARealNode$$' -v ./experiments/ 2>&1 | \
		awk -v n=$(SOAK_N) '/shard reports,/ { runs++; if ($$0 !~ / 0 shards lost/) lost++ } /^(FAIL|--- FAIL)/ { failed = 1 } { print } \
		END { printf "soak-shards: %d of %d sharded runs, %d with a shard lost\n", runs, n, lost; exit (lost > 0 || failed || runs != n) }'

test-short:
	$(GO) test -short -count=1 ./...

lint:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# bench runs every benchmark once; each prints its figures (b.ReportMetric and log lines).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m -v ./... 2>&1 | grep -Ev '^(=== RUN|--- PASS|PASS$$|ok |\?)'

# soak-quickstart runs the README's first command, the quickstart, SOAK_N
# times (about 2 minutes each) and counts the passes: it fails below 19 in
# 20. make test runs its short variant (cmd/llmchaos
# TestRunShortQuickstartEndToEnd and the nightly-short suite), which must
# pass every time.
SOAK_N ?= 20
soak-quickstart: build
	BIN=$(BIN) scripts/soak-quickstart.sh $(SOAK_N)

# image builds the FROM scratch image of the static binary; no base image is pulled.
image: build
	docker build -f deploy/Dockerfile -t $(IMAGE) .

clean:
	rm -rf bin
