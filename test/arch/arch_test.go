// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package arch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kquant/kquant/"

// pkg is what go list says of one package.
type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// rule forbids the packages under from importing what forbidden matches.
type rule struct {
	name string
	// from matches the importing packages (module-relative path).
	from func(string) bool
	// forbidden says why an import (full path) is forbidden, "" if allowed.
	forbidden func(from, imp string) string
	// tests applies the rule to test imports too.
	tests bool
}

// under matches path and everything below it.
func under(prefixes ...string) func(string) bool {
	return func(p string) bool {
		for _, pre := range prefixes {
			if p == pre || strings.HasPrefix(p, pre+"/") {
				return true
			}
		}
		return false
	}
}

// kq returns the module-relative path of a kquant import, ok false for others.
func kq(imp string) (string, bool) {
	if !strings.HasPrefix(imp, module) {
		return "", false
	}
	return strings.TrimPrefix(imp, module), true
}

// anyOf forbids kquant imports under the given paths.
func anyOf(paths ...string) func(from, imp string) string {
	in := under(paths...)
	return func(_, imp string) string {
		if p, ok := kq(imp); ok && in(p) {
			return "imports " + p
		}
		return ""
	}
}

// onlyKquant allows, of kquant, only the given paths (and the package's own subtree).
func onlyKquant(allowed ...string) func(from, imp string) string {
	in := under(allowed...)
	return func(from, imp string) string {
		if p, ok := kq(imp); ok && !in(p) && !under(from)(p) {
			return "imports " + p
		}
		return ""
	}
}

// noKubernetesClients forbids the client libraries: the engine talks to no API server.
func noKubernetesClients(_, imp string) string {
	for _, pre := range []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"} {
		if imp == pre || strings.HasPrefix(imp, pre+"/") {
			return "imports " + imp
		}
	}
	return ""
}

// noKubernetes forbids every Kubernetes library.
func noKubernetes(_, imp string) string {
	if strings.HasPrefix(imp, "k8s.io/") || strings.HasPrefix(imp, "sigs.k8s.io/") {
		return "imports " + imp
	}
	return ""
}

func both(a, b func(from, imp string) string) func(from, imp string) string {
	return func(from, imp string) string {
		if r := a(from, imp); r != "" {
			return r
		}
		return b(from, imp)
	}
}

// reconciler matches the reconcilers' packages, controllers/<kind> and
// below, but not controllers/ itself (the wiring), controllers/internal or
// controllers/metrics (what the reconcilers share).
func reconciler(p string) bool {
	rest, ok := strings.CutPrefix(p, "controllers/")
	return ok && !under("internal", "metrics")(rest)
}

// noOtherReconciler forbids a reconciler to import another one: what two
// reconcilers share lives in controllers/internal or domain/.
func noOtherReconciler(from, imp string) string {
	p, ok := kq(imp)
	if !ok || !reconciler(p) {
		return ""
	}
	kind, _, _ := strings.Cut(strings.TrimPrefix(from, "controllers/"), "/")
	if under("controllers/" + kind)(p) {
		return ""
	}
	return "imports " + p
}

// theGPUEngine are the packages that run kernels; only cmd/ and tests
// import them.
var theGPUEngine = []string{"internal/gpu", "internal/cuda", "internal/bench", "kernels"}

// rules is the layering of docs/architecture.md: every arrow points down.
//
//	cmd/, test/                          binaries and tests: anything
//	controllers/<kind>                   the reconcilers (not each other)
//	controllers/internal/...  agent/     what only reconcilers share; the node daemon
//	domain/...                           what each object is, as pure functions
//	internal/bench  internal/gpu         the harness, the CUDA backend
//	internal/measure                     their contract
//	internal/quant/...   kernels         recipes as code, CUDA launchers
//	internal/cuda                        the driver binding (a leaf)
//	api/...                              the API and the rules beside it
var rules = []rule{
	{name: "api imports only api", from: under("api"), forbidden: onlyKquant("api"), tests: true},
	{name: "internal/logging is a leaf any layer may use", from: under("internal/logging"), forbidden: both(onlyKquant(), noKubernetes), tests: true},
	{name: "internal/cuda is a leaf", from: under("internal/cuda"), forbidden: onlyKquant(), tests: true},
	// kernels may also import internal/quant/element, a leaf of numbers (the
	// formats' largest values), so that a format's constants are written once.
	{name: "kernels imports only internal/cuda (and the element formats)", from: under("kernels"),
		forbidden: onlyKquant("internal/cuda", "internal/quant/element"), tests: false},
	{name: "internal/quant is pure Go", from: under("internal/quant"),
		forbidden: both(onlyKquant("internal/quant"), noKubernetes), tests: true},
	{name: "internal/measure is the harness-backend contract", from: under("internal/measure"),
		forbidden: onlyKquant("internal/quant", "api"), tests: true},
	{name: "the CUDA backend does not know the harness", from: under("internal/gpu"),
		forbidden: anyOf("internal/bench"), tests: true},
	{name: "the harness does not know the CUDA backend", from: under("internal/bench"),
		forbidden: anyOf("internal/gpu", "internal/cuda", "kernels"), tests: true},
	{name: "the engine does not import the domain, the daemon, the manager or API clients", from: under("internal", "kernels"),
		forbidden: both(anyOf("domain", "agent", "controllers", "cmd", "test"), noKubernetesClients), tests: false},
	// domain/ is what the CLI, the fakes, the daemon and the reconcilers all
	// know of an object; it acts on nothing, so it reads no API server.
	{name: "domain imports only api, the engine's leaves and domain", from: under("domain"),
		forbidden: both(both(onlyKquant("api", "internal", "domain"), anyOf(theGPUEngine...)), noKubernetesClients), tests: false},
	{name: "domain's tests do not import the manager, the daemon or the binaries", from: under("domain"),
		forbidden: anyOf("controllers", "agent", "cmd"), tests: true},
	{name: "controllers do not import the daemon or the GPU engine", from: under("controllers"),
		forbidden: anyOf(append([]string{"agent", "cmd"}, theGPUEngine...)...), tests: true},
	{name: "what reconcilers share imports only api, the engine's leaves, domain and itself", from: under("controllers/internal", "controllers/metrics"),
		forbidden: onlyKquant("api", "internal", "domain", "controllers/internal"), tests: false},
	{name: "what reconcilers share imports no reconciler, tests included", from: under("controllers/internal", "controllers/metrics"),
		forbidden: func(_, imp string) string {
			if p, ok := kq(imp); ok && reconciler(p) {
				return "imports " + p
			}
			return ""
		}, tests: true},
	{name: "a reconciler does not import another", from: reconciler, forbidden: noOtherReconciler, tests: true},
	{name: "the daemon runs no kernels itself", from: under("agent"),
		forbidden: anyOf("controllers", "cmd", "internal/gpu", "internal/cuda", "kernels"), tests: true},
	// Run pods are the default run path; in-agent execution is opt-in, and
	// what both use lives in agent/runner, agent/runstatus and agent/gpuguard.
	{name: "the run path does not import the opt-in in-agent executor",
		from:      under("agent/runmode", "agent/runner", "agent/runstatus", "agent/gpuguard", "agent/preflight"),
		forbidden: anyOf("agent/executor"), tests: true},
	{name: "only cmd/agent and tests import agent/", from: func(p string) bool { return !under("agent", "cmd/agent", "test")(p) },
		forbidden: anyOf("agent"), tests: true},
}

// TestImportsPointDown fails on an import that points up (or sideways) in
// the layering: go list's view of every package, with the gpu build tag and
// without.
func TestImportsPointDown(t *testing.T) {
	for _, tags := range []string{"", "gpu"} {
		pkgs, err := list(tags)
		if err != nil {
			t.Fatal(err)
		}
		if len(pkgs) < 20 {
			t.Fatalf("go list -tags=%q found %d packages; is the test run from the module?", tags, len(pkgs))
		}
		for _, p := range pkgs {
			from, ok := kq(p.ImportPath)
			if !ok {
				continue
			}
			for _, r := range rules {
				if !r.from(from) {
					continue
				}
				imps := p.Imports
				if r.tests {
					imps = slices.Concat(p.Imports, p.TestImports, p.XTestImports)
				}
				for _, imp := range imps {
					if why := r.forbidden(from, imp); why != "" {
						t.Errorf("tags %q: %s %s: %s", tags, from, why, r.name)
					}
				}
			}
		}
	}
}

// list runs go list on the whole module.
func list(tags string) ([]pkg, error) {
	cmd := exec.Command("go", "list", "-e", "-tags="+tags, "-json=ImportPath,Imports,TestImports,XTestImports", module+"...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}
