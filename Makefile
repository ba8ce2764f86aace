# kquant: `make demo` brings up a local control plane with the operator and an
# agent and runs a sample job; `make test` runs every test.

SHELL := /usr/bin/env bash -o pipefail
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS := -X github.com/kquant/kquant/cmd/internal/version.Version=$(VERSION)
BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT := $(BIN)/golangci-lint
GO_TEST_FLAGS ?= -race -count=1
# The agent binds the CUDA driver with cgo (dlopen at run time, no CUDA at build time).
export CGO_ENABLED := 1

.PHONY: all
all: build

##@ Build

.PHONY: build
# One go build for every binary: the three share the compilation of their common
# dependencies, and their link steps run side by side.
COMMANDS := $(patsubst %,./%,$(wildcard cmd/manager cmd/agent cmd/kquantctl))
build: ## Build bin/manager, bin/agent and bin/kquantctl, and bin/kubectl-kquant (the same program as a kubectl plugin).
	@mkdir -p $(BIN)
	@source hack/lib/progress.sh; \
	  [[ -x $(BIN)/manager ]] || progress_intro "building $(notdir $(COMMANDS)) into bin/" \
	    "the first build compiles Kubernetes' client libraries too, later ones reuse Go's build cache" \
	    "10 minutes on 2 busy cores (1,300 packages), seconds once cached"; \
	  progress_go_build "kquant binaries" -ldflags "$(LDFLAGS)" -o $(BIN)/ -- $(COMMANDS)
	@ln -f $(BIN)/kquantctl $(BIN)/kubectl-kquant

.PHONY: plots
plots: ## Redraw docs/images/kubectl-kquant-<metric>.png with the plugin's plot code.
	go test -count=1 ./cmd/kquantctl -run TestDocsPlotsAreTheCodes -update-plots

.PHONY: dist
dist: ## Release archives of kubectl-kquant (dist/*.tar.gz per OS/arch, dist/SHA256SUMS) and the krew manifest plugins/kquant.yaml, checked and installed by krew.
	hack/dist.sh $(VERSION)
	cd hack/tools/krew && go test -count=1 ./...

$(CONTROLLER_GEN): hack/tools/go.mod hack/tools/go.sum
	@mkdir -p $(BIN)
	@cd hack/tools && source $(CURDIR)/hack/lib/progress.sh && \
	  progress_intro "building bin/controller-gen from hack/tools" "make verify and make generate need it; built again only when hack/tools/go.sum changes" "3 minutes on 2 busy cores (430 packages)" && \
	  progress_go_build controller-gen -o $(CONTROLLER_GEN) -- sigs.k8s.io/controller-tools/cmd/controller-gen

##@ Generated code

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy functions and typed apply configurations.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt applyconfiguration:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC from kubebuilder markers.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	@if [[ -d controllers ]]; then $(CONTROLLER_GEN) rbac:roleName=kquant-manager,fileName=manager_role.yaml paths=./controllers/... output:rbac:artifacts:config=config/rbac; fi
	@if [[ -d agent ]]; then $(CONTROLLER_GEN) rbac:roleName=kquant-agent,fileName=agent_role.yaml paths=./agent/... output:rbac:artifacts:config=config/rbac; fi

.PHONY: verify
verify: $(CONTROLLER_GEN) ## Fail when generated files or gofmt are stale.
	hack/verify-generated.sh
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

$(GOLANGCI_LINT): hack/tools/golangci-lint/go.mod hack/tools/golangci-lint/go.sum
	@mkdir -p $(BIN)
	cd hack/tools/golangci-lint && go build -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint (.golangci.yml: gofmt, go vet, staticcheck, ...) and shellcheck (.shellcheckrc) over every shell script.
	$(GOLANGCI_LINT) run ./...
	@command -v shellcheck >/dev/null || { echo "shellcheck is missing: apt-get install shellcheck (.ci/run installs it)"; exit 1; }
	shellcheck $$(git ls-files '*.sh' .ci/run)

##@ Test

.PHONY: envtest-assets
envtest-assets: ## Build (once) kube-apiserver, etcd and kubectl for tests.
	@hack/envtest-assets.sh >/dev/null

.PHONY: test
# The quantizers are single-threaded number crunching with exhaustive sweeps: the
# race detector finds nothing there and makes them ten times slower, so they run
# without it; everything with goroutines (controllers, agent, binaries) runs with it.
PURE_PKGS := ./internal/quant/...
RACE_PKGS = $(shell go list ./... | grep -v '/internal/quant')

# progress_run prints a line whenever go test has been silent for 15 s: a cold
# cache compiles for minutes before the first package reports.
PROGRESS := source $(CURDIR)/hack/lib/progress.sh; progress_run
test: verify envtest-assets ## Run all tests against a real kube-apiserver and etcd.
	@source hack/lib/progress.sh; progress_intro "running every test" \
	  "the first run compiles every package's tests, with the race detector, before the first result" \
	  "tens of minutes on 2 cores; a line whenever go test has been silent for 15 s"
	$(PROGRESS) "go test (quantizers)" go test -count=1 $(PURE_PKGS)
	export KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh); $(PROGRESS) "go test -race" go test $(GO_TEST_FLAGS) $(RACE_PKGS)
	cd hack/tools/images && $(PROGRESS) "go test (images)" go test -count=1 ./...
	cd hack/tools/promql && $(PROGRESS) "go test (promql)" go test -count=1 ./...
	cd hack/tools/krew && $(PROGRESS) "go test (krew)" go test -count=1 ./...


.PHONY: promql-test
promql-test: ## Evaluate the chart's Prometheus rules and parse its dashboard's queries with Prometheus' PromQL engine (also part of make test).
	cd hack/tools/promql && go test -count=1 ./...

.PHONY: e2e
e2e: envtest-assets ## Fault scenarios only: real binaries, etcd and kube-apiserver as processes (also part of make test).
	KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) go test -count=1 -v -timeout 20m ./test/e2e

# `make scale` measures the controller with a simulated fleet (test/scale,
# build tag scale): the real manager binary as a process, a real API server and
# etcd, an in-process agent pool. Smaller runs: make scale SCALE_ARGS="-nodes 100 -jobs 1000".
# Run pods (the chart's default) on KWOK's kubelets: hack/kwok-assets.sh once, then
# make scale SCALE_ARGS="-nodes 50 -jobs 500 -gpu-allocation DevicePlugin".
SCALE_ARGS ?= -nodes 1000 -gpus 8 -jobs 10000

.PHONY: scale
scale: build envtest-assets ## Scale harness: 1,000 simulated nodes x 8 GPUs; prints the table of docs/benchmarks.md.
	KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) go test -tags scale -count=1 -timeout 90m -v -run '^TestScale$$' ./test/scale -args -manager-bin $(BIN)/manager $(SCALE_ARGS)

##@ Packaging and demo

HELM := $(BIN)/helm
HELM_VERSION := v3.21.4
# Stamp the release and the Kubernetes minor of its client libraries, as Helm's own
# Makefile does: unstamped, Helm assumes Kubernetes 1.20 for charts' kubeVersion.
HELM_LDFLAGS := -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
  $(foreach p,chartutil lint/rules,-X helm.sh/helm/v3/pkg/$(p).k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/$(p).k8sVersionMinor=36)
CONTAINER_TOOL ?= docker
IMG_REGISTRY ?= ghcr.io/kquant
IMG_TAG ?= $(VERSION)
MANAGER_IMG ?= $(IMG_REGISTRY)/kquant-manager:$(IMG_TAG)
AGENT_IMG ?= $(IMG_REGISTRY)/kquant-agent:$(IMG_TAG)

$(HELM): hack/tools/helm/go.mod hack/tools/helm/go.sum
	@mkdir -p $(BIN)
	@cd hack/tools/helm && source $(CURDIR)/hack/lib/progress.sh && \
	  progress_intro "building bin/helm $(HELM_VERSION) from hack/tools/helm" "the chart tests and make cluster-install need it; built again only when its go.sum changes" "7 minutes on 2 busy cores (940 packages)" && \
	  CGO_ENABLED=0 progress_go_build helm -trimpath -ldflags "$(HELM_LDFLAGS)" -o $(HELM) -- helm.sh/helm/v3/cmd/helm

.PHONY: helm
helm: $(HELM) ## Build bin/helm from hack/tools/helm.

.PHONY: chart-sync
chart-sync: ## Copy the generated CRDs and RBAC roles into charts/kquant.
	hack/chart-sync.sh

.PHONY: chart-test
chart-test: $(HELM) envtest-assets ## helm lint, helm template and kustomize, dry-run against a real API server.
	HELM=$(HELM) KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) go test -count=1 ./test/chart/...

.PHONY: docker-build
docker-build: docker-build-manager docker-build-agent ## Build the manager and agent images.

.PHONY: docker-build-manager
docker-build-manager:
	$(CONTAINER_TOOL) build -f Dockerfile.manager --build-arg VERSION=$(VERSION) -t $(MANAGER_IMG) .

.PHONY: docker-build-agent
docker-build-agent:
	$(CONTAINER_TOOL) build -f Dockerfile.agent --build-arg VERSION=$(VERSION) -t $(AGENT_IMG) .

.PHONY: images
images: ## Build the manager, agent and pause images as OCI archives in bin/images (no Docker, no registry).
	IMG_REGISTRY=$(IMG_REGISTRY) IMG_TAG=$(IMG_TAG) VERSION=$(VERSION) hack/images.sh

.PHONY: demo
demo: ## Local control plane, manager and agents; runs a sample job and prints the results.
	hack/demo.sh up

.PHONY: demo-test
# The docs show the simulated nodes' output, so the demo simulates them even on a GPU machine.
demo-test: ## make demo, then every shell block of README.md and docs/*.md against it (test/docs).
	KQUANT_DEMO_SIMULATE=1 hack/demo.sh up
	KQUANT_DOCS_DEMO=$(CURDIR)/.demo go test -count=1 -v ./test/docs

.PHONY: demo-down
demo-down: ## Stop everything `make demo` started and remove .demo/.
	hack/demo.sh down

##@ Local cluster (a real kubelet, containerd, images built offline, helm)

# hack/cluster.sh keeps its state in .cluster/ (kubeconfig: .cluster/kubeconfig);
# the binaries are built once from Go modules and cached in ~/.cache/kquant.
.PHONY: cluster
cluster: ## Start a real single-node cluster with simulated GPUs (.cluster/kubeconfig).
	hack/cluster.sh up

.PHONY: cluster-install
cluster-install: ## Build and import the images, then helm install charts/kquant onto the cluster.
	hack/cluster.sh install

.PHONY: cluster-down
cluster-down: ## Stop the cluster; nothing stays running or mounted.
	hack/cluster.sh down

.PHONY: cluster-e2e
cluster-e2e: ## cluster, cluster-install, the real-cluster tests (test/cluster), cluster-down.
	hack/cluster-e2e.sh

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z0-9_-]+:.*##/ { printf "  %-16s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
