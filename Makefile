# kquant: `make demo` brings up a local control plane with the operator and an
# agent and runs a sample job; `make test` runs every test.

SHELL := /usr/bin/env bash -o pipefail
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
LDFLAGS := -X github.com/kquant/kquant/cmd/internal/version.Version=$(VERSION)
BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
GO_TEST_FLAGS ?= -race -count=1
# The agent binds the CUDA driver with cgo (dlopen at run time, no CUDA at build time).
export CGO_ENABLED := 1

.PHONY: all
all: build

##@ Build

.PHONY: build
build: ## Build bin/manager, bin/agent and bin/kquantctl, and bin/kubectl-kquant (the same program as a kubectl plugin).
	@mkdir -p $(BIN)
	@for cmd in manager agent kquantctl; do \
	  if [[ -d cmd/$$cmd ]]; then go build -ldflags "$(LDFLAGS)" -o $(BIN)/$$cmd ./cmd/$$cmd || exit 1; fi; \
	done
	@ln -f $(BIN)/kquantctl $(BIN)/kubectl-kquant

$(CONTROLLER_GEN): hack/tools/go.mod hack/tools/go.sum
	cd hack/tools && go build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

##@ Generated code

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy functions and typed apply configurations.
	$(CONTROLLER_GEN) object applyconfiguration paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC from kubebuilder markers.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	@if [[ -d controllers ]]; then $(CONTROLLER_GEN) rbac:roleName=kquant-manager,fileName=manager_role.yaml paths=./controllers/... output:rbac:artifacts:config=config/rbac; fi
	@if [[ -d agent ]]; then $(CONTROLLER_GEN) rbac:roleName=kquant-agent,fileName=agent_role.yaml paths=./agent/... output:rbac:artifacts:config=config/rbac; fi

.PHONY: verify
verify: $(CONTROLLER_GEN) ## Fail when generated files or gofmt are stale.
	hack/verify-generated.sh
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

.PHONY: lint
lint: ## gofmt and go vet.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet ./...

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

test: verify envtest-assets ## Run all tests against a real kube-apiserver and etcd.
	go test -count=1 $(PURE_PKGS)
	KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) go test $(GO_TEST_FLAGS) $(RACE_PKGS)
	cd hack/tools/images && go test -count=1 ./...
	cd hack/tools/promql && go test -count=1 ./...


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
	cd hack/tools/helm && CGO_ENABLED=0 go build -trimpath -ldflags "$(HELM_LDFLAGS)" -o $(HELM) helm.sh/helm/v3/cmd/helm

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
