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
build: ## Build bin/manager, bin/agent and bin/kquantctl.
	@mkdir -p $(BIN)
	@for cmd in manager agent kquantctl; do \
	  if [[ -d cmd/$$cmd ]]; then go build -ldflags "$(LDFLAGS)" -o $(BIN)/$$cmd ./cmd/$$cmd || exit 1; fi; \
	done

$(CONTROLLER_GEN): hack/tools/go.mod hack/tools/go.sum
	cd hack/tools && go build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

##@ Generated code

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy functions.
	$(CONTROLLER_GEN) object paths=./api/...

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
test: verify envtest-assets ## Run all tests against a real kube-apiserver and etcd.
	KUBEBUILDER_ASSETS=$$(hack/envtest-assets.sh) go test $(GO_TEST_FLAGS) ./...

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ { printf "  %-16s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
