// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package chart

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kquant/kquant/test/testenv"
)

const chartDir = "charts/kquant"

var tl *tools

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var stop func()
	var err error
	tl, stop, err = startTools()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chart tests: %v\n", err)
		return 1
	}
	defer stop()
	if err := prepareCluster(); err != nil {
		fmt.Fprintf(os.Stderr, "chart tests: %v\n", err)
		return 1
	}
	return m.Run()
}

// prepareCluster applies for real what the dry-runs depend on: the chart's CRDs
// (testenv installed config/crd/bases already; re-applying the chart's copies
// proves they apply cleanly), a stand-in ServiceMonitor CRD, and the namespaces
// the releases go to.
func prepareCluster() error {
	if _, err := tl.kubectlCmd(nil, "apply", "--server-side", "--field-manager=kquant-chart-test", "-f", filepath.Join(chartDir, "crds"), "-f", "test/chart/testdata/servicemonitor-crd.yaml", "-f", "test/chart/testdata/prometheusrule-crd.yaml"); err != nil {
		return err
	}
	if _, err := tl.kubectlCmd(nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com"); err != nil {
		return err
	}
	for _, ns := range []string{"kquant-system", "gpu-ops", "minimal", "live"} {
		if _, err := tl.kubectlCmd(nil, "create", "namespace", ns); err != nil {
			return err
		}
	}
	return nil
}

// render runs helm template for a release and parses the objects.
func render(t *testing.T, release, namespace string, args ...string) ([]byte, []*unstructured.Unstructured) {
	t.Helper()
	args = append([]string{"template", release, chartDir, "--namespace", namespace, "--kube-version", tl.kubeVersion}, args...)
	out, err := tl.helmCmd(args...)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	objs, err := parseObjects([]byte(out))
	if err != nil {
		t.Fatalf("parsing helm template output: %v", err)
	}
	return []byte(out), objs
}

func TestChartCopiesMatchGenerated(t *testing.T) {
	gen, err := filepath.Glob(filepath.Join(tl.root, "config/crd/bases/*.yaml"))
	if err != nil || len(gen) == 0 {
		t.Fatalf("no generated CRDs in config/crd/bases: %v", err)
	}
	shipped, _ := filepath.Glob(filepath.Join(tl.root, chartDir, "crds/*.yaml"))
	base := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if diff := cmp.Diff(base(gen), base(shipped)); diff != "" {
		t.Errorf("charts/kquant/crds lists other files than config/crd/bases (-generated +chart); run `make chart-sync`:\n%s", diff)
	}
	for _, p := range gen {
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(tl.root, chartDir, "crds", filepath.Base(p)))
		if err == nil && !bytes.Equal(want, got) {
			t.Errorf("charts/kquant/crds/%s differs from config/crd/bases; run `make chart-sync`", filepath.Base(p))
		}
	}
	for _, c := range []struct{ src, dst string }{
		{"config/policy/agent-node-restriction.yaml", "files/policy/agent-node-restriction.yaml"},
		{"config/policy/run-pod-restriction.yaml", "files/policy/run-pod-restriction.yaml"},
		{"config/policy/run-token-restriction.yaml", "files/policy/run-token-restriction.yaml"},
		{"config/policy/run-pod-creation.yaml", "files/policy/run-pod-creation.yaml"},
		{"config/policy/manager-fence.yaml", "files/policy/manager-fence.yaml"},
		{"config/policy/preflight-run-restriction.yaml", "files/policy/preflight-run-restriction.yaml"},
		{"config/catalog/catalog.yaml", "files/catalog/catalog.yaml"},
	} {
		want, _ := os.ReadFile(filepath.Join(tl.root, c.src))
		if got, err := os.ReadFile(filepath.Join(tl.root, chartDir, c.dst)); err != nil || !bytes.Equal(want, got) {
			t.Errorf("charts/kquant/%s differs from %s; run `make chart-sync`", c.dst, c.src)
		}
	}
	for _, role := range []string{"manager", "agent"} {
		src := filepath.Join(tl.root, "config/rbac", role+"_role.yaml")
		want, err := os.ReadFile(src)
		if os.IsNotExist(err) {
			t.Logf("config/rbac/%s_role.yaml is not generated yet (no rbac markers); the chart keeps its own copy", role)
			continue
		}
		got, _ := os.ReadFile(filepath.Join(tl.root, chartDir, "files/rbac", role+"_role.yaml"))
		if !bytes.Equal(want, got) {
			t.Errorf("charts/kquant/files/rbac/%s_role.yaml differs from config/rbac/%s_role.yaml; run `make chart-sync`", role, role)
		}
	}
}

func TestHelmLint(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{name: "default values"},
		{name: "non-default values", args: []string{"-f", "test/chart/testdata/nondefault-values.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"lint", chartDir, "--strict", "--kube-version", tl.kubeVersion}, tc.args...)
			if out, err := tl.helmCmd(args...); err != nil {
				t.Fatalf("helm lint: %v", err)
			} else {
				t.Log(out)
			}
		})
	}
}

func TestHelmTemplateDryRun(t *testing.T) {
	for _, tc := range []struct {
		name, release, namespace string
		args                     []string
		want                     []string
	}{
		{
			name: "default values", release: "kquant", namespace: "kquant-system",
			want: []string{
				"ClusterQuantRecipe/fp8-block-scaling",
				"ClusterQuantRecipe/fp8-current-scaling",
				"ClusterQuantRecipe/fp8-delayed-scaling",
				"ClusterQuantRecipe/mxfp8",
				"ClusterQuantRecipe/nvfp4",
				"ClusterRole/kquant-agent",
				"ClusterRole/kquant-crd-upgrade",
				"ClusterRole/kquant-edit",
				"ClusterRole/kquant-manager",
				"ClusterRole/kquant-metrics-reader",
				"ClusterRole/kquant-platform-admin",
				"ClusterRole/kquant-preflight",
				"ClusterRole/kquant-run",
				"ClusterRole/kquant-uninstall",
				"ClusterRole/kquant-view",
				"ClusterRoleBinding/kquant-agent",
				"ClusterRoleBinding/kquant-crd-upgrade",
				"ClusterRoleBinding/kquant-manager",
				"ClusterRoleBinding/kquant-uninstall",
				"ConfigMap/kquant-system/kquant-crd-upgrade",
				"DaemonSet/kquant-system/kquant-agent",
				"Deployment/kquant-system/kquant-manager",
				"Job/kquant-system/kquant-crd-upgrade",
				"Job/kquant-system/kquant-uninstall",
				"PriorityClass/kquant-idle-run",
				"PriorityClass/kquant-run",
				"Role/kquant-system/kquant-agent",
				"Role/kquant-system/kquant-leader-election",
				"Role/kquant-system/kquant-manager",
				"Role/kquant-system/kquant-uninstall",
				"RoleBinding/kquant-system/kquant-agent",
				"RoleBinding/kquant-system/kquant-leader-election",
				"RoleBinding/kquant-system/kquant-manager",
				"RoleBinding/kquant-system/kquant-uninstall",
				"Service/kquant-system/kquant-agent-metrics",
				"Service/kquant-system/kquant-manager-metrics",
				"ServiceAccount/kquant-system/kquant-agent",
				"ServiceAccount/kquant-system/kquant-crd-upgrade",
				"ServiceAccount/kquant-system/kquant-manager",
				"ServiceAccount/kquant-system/kquant-uninstall",
				"ValidatingAdmissionPolicy/kquant-agent-node-restriction",
				"ValidatingAdmissionPolicy/kquant-manager-fence",
				"ValidatingAdmissionPolicy/kquant-preflight-run-restriction",
				"ValidatingAdmissionPolicy/kquant-run-pod-creation",
				"ValidatingAdmissionPolicy/kquant-run-pod-restriction",
				"ValidatingAdmissionPolicy/kquant-run-token-restriction",
				"ValidatingAdmissionPolicyBinding/kquant-agent-node-restriction",
				"ValidatingAdmissionPolicyBinding/kquant-manager-fence",
				"ValidatingAdmissionPolicyBinding/kquant-preflight-run-restriction",
				"ValidatingAdmissionPolicyBinding/kquant-run-pod-creation",
				"ValidatingAdmissionPolicyBinding/kquant-run-pod-restriction",
				"ValidatingAdmissionPolicyBinding/kquant-run-token-restriction",
			},
		},
		{
			name: "non-default values", release: "fleet", namespace: "gpu-ops",
			args: []string{"-f", "test/chart/testdata/nondefault-values.yaml"},
			want: []string{
				"ClusterRole/gpu-quant-agent",
				"ClusterRole/gpu-quant-crd-upgrade",
				"ClusterRole/gpu-quant-manager",
				"ClusterRole/gpu-quant-metrics-reader",
				"ClusterRole/gpu-quant-platform-admin",
				"ClusterRole/gpu-quant-preflight",
				"ClusterRole/gpu-quant-run",
				"ClusterRoleBinding/gpu-quant-agent",
				"ClusterRoleBinding/gpu-quant-crd-upgrade",
				"ClusterRoleBinding/gpu-quant-manager",
				"ConfigMap/gpu-ops/gpu-quant-crd-upgrade",
				"ConfigMap/gpu-ops/gpu-quant-dashboard",
				"DaemonSet/gpu-ops/gpu-quant-agent",
				"Deployment/gpu-ops/gpu-quant-manager",
				"Job/gpu-ops/gpu-quant-crd-upgrade",
				"NetworkPolicy/gpu-ops/gpu-quant-agent",
				"NetworkPolicy/gpu-ops/gpu-quant-manager",
				"PodDisruptionBudget/gpu-ops/gpu-quant-manager",
				"PrometheusRule/gpu-ops/gpu-quant",
				"Role/gpu-ops/gpu-quant-agent",
				"Role/gpu-ops/gpu-quant-leader-election",
				"Role/gpu-ops/gpu-quant-manager",
				"RoleBinding/gpu-ops/gpu-quant-agent",
				"RoleBinding/gpu-ops/gpu-quant-leader-election",
				"RoleBinding/gpu-ops/gpu-quant-manager",
				"Service/gpu-ops/gpu-quant-agent-metrics",
				"Service/gpu-ops/gpu-quant-manager-metrics",
				"ServiceAccount/gpu-ops/gpu-quant-crd-upgrade",
				"ServiceAccount/gpu-ops/quant-controller",
				"ServiceMonitor/gpu-ops/gpu-quant-agent",
				"ServiceMonitor/gpu-ops/gpu-quant-manager",
				"ValidatingAdmissionPolicy/gpu-quant-agent-node-restriction",
				"ValidatingAdmissionPolicy/gpu-quant-manager-fence",
				"ValidatingAdmissionPolicy/gpu-quant-preflight-run-restriction",
				"ValidatingAdmissionPolicy/gpu-quant-run-pod-creation",
				"ValidatingAdmissionPolicy/gpu-quant-run-pod-restriction",
				"ValidatingAdmissionPolicy/gpu-quant-run-token-restriction",
				"ValidatingAdmissionPolicyBinding/gpu-quant-agent-node-restriction",
				"ValidatingAdmissionPolicyBinding/gpu-quant-manager-fence",
				"ValidatingAdmissionPolicyBinding/gpu-quant-preflight-run-restriction",
				"ValidatingAdmissionPolicyBinding/gpu-quant-run-pod-creation",
				"ValidatingAdmissionPolicyBinding/gpu-quant-run-pod-restriction",
				"ValidatingAdmissionPolicyBinding/gpu-quant-run-token-restriction",
			},
		},
		{
			name: "manager only without leader election or services", release: "kq", namespace: "minimal",
			args: []string{"--set", "agent.enabled=false", "--set", "manager.leaderElection.enabled=false", "--set", "manager.metrics.service.enabled=false"},
			want: []string{
				"ClusterQuantRecipe/fp8-block-scaling",
				"ClusterQuantRecipe/fp8-current-scaling",
				"ClusterQuantRecipe/fp8-delayed-scaling",
				"ClusterQuantRecipe/mxfp8",
				"ClusterQuantRecipe/nvfp4",
				"ClusterRole/kq-kquant-crd-upgrade",
				"ClusterRole/kq-kquant-edit",
				"ClusterRole/kq-kquant-manager",
				"ClusterRole/kq-kquant-metrics-reader",
				"ClusterRole/kq-kquant-platform-admin",
				"ClusterRole/kq-kquant-preflight",
				"ClusterRole/kq-kquant-run",
				"ClusterRole/kq-kquant-uninstall",
				"ClusterRole/kq-kquant-view",
				"ClusterRoleBinding/kq-kquant-crd-upgrade",
				"ClusterRoleBinding/kq-kquant-manager",
				"ClusterRoleBinding/kq-kquant-uninstall",
				"ConfigMap/minimal/kq-kquant-crd-upgrade",
				"Deployment/minimal/kq-kquant-manager",
				"Job/minimal/kq-kquant-crd-upgrade",
				"Job/minimal/kq-kquant-uninstall",
				"PriorityClass/kquant-idle-run",
				"PriorityClass/kquant-run",
				"Role/minimal/kq-kquant-manager",
				"Role/minimal/kq-kquant-uninstall",
				"RoleBinding/minimal/kq-kquant-manager",
				"RoleBinding/minimal/kq-kquant-uninstall",
				"ServiceAccount/minimal/kq-kquant-crd-upgrade",
				"ServiceAccount/minimal/kq-kquant-manager",
				"ServiceAccount/minimal/kq-kquant-uninstall",
				"ValidatingAdmissionPolicy/kq-kquant-manager-fence",
				"ValidatingAdmissionPolicy/kq-kquant-preflight-run-restriction",
				"ValidatingAdmissionPolicy/kq-kquant-run-pod-creation",
				"ValidatingAdmissionPolicy/kq-kquant-run-pod-restriction",
				"ValidatingAdmissionPolicy/kq-kquant-run-token-restriction",
				"ValidatingAdmissionPolicyBinding/kq-kquant-manager-fence",
				"ValidatingAdmissionPolicyBinding/kq-kquant-preflight-run-restriction",
				"ValidatingAdmissionPolicyBinding/kq-kquant-run-pod-creation",
				"ValidatingAdmissionPolicyBinding/kq-kquant-run-pod-restriction",
				"ValidatingAdmissionPolicyBinding/kq-kquant-run-token-restriction",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifests, objs := render(t, tc.release, tc.namespace, tc.args...)
			if diff := cmp.Diff(tc.want, keys(objs)); diff != "" {
				t.Errorf("rendered objects (-want +got):\n%s", diff)
			}
			out, err := tl.dryRun(manifests)
			if err != nil {
				t.Fatalf("server-side dry-run: %v", err)
			}
			t.Logf("server-side dry-run of %d objects:\n%s", len(objs), out)
			if n := strings.Count(out, "(server dry run)"); n != len(objs) {
				t.Errorf("kubectl reported %d objects dry-run, want %d", n, len(objs))
			}
		})
	}
}

// TestHelmTemplateDefaults checks what a platform team relies on in the default
// render: where and how the agent runs, how the manager is locked down, and
// that the RBAC is exactly what the code's markers declare.
func TestHelmTemplateDefaults(t *testing.T) {
	_, objs := render(t, "kquant", "kquant-system")
	m := byKey(objs)
	ds := m["DaemonSet/kquant-system/kquant-agent"]
	dep := m["Deployment/kquant-system/kquant-manager"]
	if ds == nil || dep == nil {
		t.Fatalf("missing agent DaemonSet or manager Deployment in %v", keys(objs))
	}
	str := func(o *unstructured.Unstructured, path ...string) string {
		v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
		return fmt.Sprint(v)
	}
	pod := []string{"spec", "template", "spec"}
	for _, tc := range []struct {
		name, got, want string
	}{
		{"agent nodeSelector", str(ds, append(pod, "nodeSelector")...), "map[nvidia.com/gpu.present:true]"},
		{"agent tolerations", str(ds, append(pod, "tolerations")...), "[map[key:gate.kquant.dev/fp8 operator:Exists] map[key:gate.kquant.dev/fp8-block operator:Exists] " +
			"map[key:gate.kquant.dev/mxfp8 operator:Exists] map[key:gate.kquant.dev/nvfp4 operator:Exists] map[effect:NoSchedule key:nvidia.com/gpu operator:Exists]]"},
		{"agent runtimeClassName", str(ds, append(pod, "runtimeClassName")...), "nvidia"},
		{"agent priorityClassName", str(ds, append(pod, "priorityClassName")...), "system-node-critical"},
		{"agent runAsNonRoot", str(ds, append(pod, "securityContext", "runAsNonRoot")...), "true"},
		{"manager runAsNonRoot", str(dep, append(pod, "securityContext", "runAsNonRoot")...), "true"},
		{"manager replicas", str(dep, "spec", "replicas"), "1"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %s, want %s", tc.name, tc.got, tc.want)
		}
	}

	container := func(o *unstructured.Unstructured) map[string]any {
		cs, _, _ := unstructured.NestedSlice(o.Object, append(pod, "containers")...)
		if len(cs) != 1 {
			t.Fatalf("%s has %d containers, want 1", key(o), len(cs))
		}
		return cs[0].(map[string]any)
	}
	agent, manager := container(ds), container(dep)
	env := map[string]string{}
	for _, e := range agent["env"].([]any) {
		e := e.(map[string]any)
		if v, ok := e["value"]; ok {
			env[e["name"].(string)] = fmt.Sprint(v)
		} else {
			env[e["name"].(string)] = fmt.Sprint(e["valueFrom"])
		}
	}
	for name, want := range map[string]string{
		"NVIDIA_VISIBLE_DEVICES": "all",
		"NODE_NAME":              "map[fieldRef:map[fieldPath:spec.nodeName]]",
	} {
		if env[name] != want {
			t.Errorf("agent env %s = %q, want %q", name, env[name], want)
		}
	}
	for _, c := range []map[string]any{agent, manager} {
		sc := fmt.Sprint(c["securityContext"])
		for _, want := range []string{"readOnlyRootFilesystem:true", "allowPrivilegeEscalation:false", "drop:[ALL]"} {
			if !strings.Contains(sc, want) {
				t.Errorf("container %s securityContext %s lacks %s", c["name"], sc, want)
			}
		}
		for _, probe := range []string{"livenessProbe", "readinessProbe"} {
			if c[probe] == nil {
				t.Errorf("container %s has no %s", c["name"], probe)
			}
		}
		if c["resources"] == nil {
			t.Errorf("container %s has no resources", c["name"])
		}
	}
	if args := fmt.Sprint(manager["args"]); !strings.Contains(args, "--leader-elect=true") {
		t.Errorf("manager args %s lack --leader-elect=true", args)
	}
	// The safe mode by default: runs in run pods that ask the device plugin
	// for their GPU, started from the agent image.
	agentImage := fmt.Sprint(agent["image"])
	for _, want := range []string{"--gpu-allocation=DevicePlugin", "--run-image=" + agentImage, "--run-cluster-role=kquant-run", "--allow-shared-gpus=false"} {
		if args := fmt.Sprint(manager["args"]); !strings.Contains(args, want) {
			t.Errorf("manager args %s lack %s", args, want)
		}
	}
	if cr := m["ClusterRole/kquant-run"]; cr == nil {
		t.Error("no ClusterRole/kquant-run for the run pods")
	} else {
		got, _, _ := unstructured.NestedSlice(cr.Object, "rules")
		if diff := cmp.Diff(readGeneratedRules(t, filepath.Join(tl.root, "config/rbac/run_role.yaml")), got); diff != "" {
			t.Errorf("ClusterRole/kquant-run rules differ from config/rbac/run_role.yaml (-config +chart):\n%s", diff)
		}
	}

	for _, role := range []string{"manager", "agent"} {
		want := readGeneratedRules(t, filepath.Join(tl.root, chartDir, "files/rbac", role+"_role.yaml"))
		if gen := filepath.Join(tl.root, "config/rbac", role+"_role.yaml"); fileExists(gen) {
			want = readGeneratedRules(t, gen)
		}
		cr := m["ClusterRole/kquant-"+role]
		if cr == nil {
			t.Fatalf("no ClusterRole/kquant-%s", role)
		}
		got, _, _ := unstructured.NestedSlice(cr.Object, "rules")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ClusterRole/kquant-%s rules differ from the generated ones (-generated +chart):\n%s", role, diff)
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestBadValuesFail checks that values.schema.json and the templates refuse
// values that would otherwise render a broken or surprising installation.
func TestBadValuesFail(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     []string
		wantErr string
	}{
		{"unknown backend", []string{"agent.backend=gpu"}, "agent.backend"},
		{"misspelt key", []string{"manager.replica=2"}, "replica"},
		{"negative replicas", []string{"manager.replicas=-1"}, "manager.replicas"},
		{"port out of range", []string{"manager.metrics.port=70000"}, "port"},
		{"bad simulate spec", []string{"agent.simulate=H100"}, "agent.simulate"},
		{"bad pull policy", []string{"agent.image.pullPolicy=Sometimes"}, "pullPolicy"},
		{"string for a boolean", []string{"manager.enabled=maybe"}, "manager.enabled"},
		{"replicas without leader election", []string{"manager.replicas=2", "manager.leaderElection.enabled=false"}, "leaderElection"},
		{"unknown validation action", []string{"agent.admissionPolicy.validationActions={Block}"}, "validationActions"},
		{"unknown failure policy", []string{"agent.admissionPolicy.failurePolicy=Retry"}, "failurePolicy"},
		{"digest that is not sha256", []string{"manager.image.digest=latest"}, "digest"},
		{"uninstall timeout that is not a duration", []string{"uninstall.timeout=5"}, "timeout"},
		{"no API server port", []string{"networkPolicy.apiServerPorts={}"}, "apiServerPorts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "kquant", chartDir, "--kube-version", tl.kubeVersion}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			_, err := tl.helmCmd(args...)
			if err == nil {
				t.Fatalf("helm template with %v succeeded, want an error mentioning %q", tc.set, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("helm template with %v: error does not mention %q:\n%v", tc.set, tc.wantErr, err)
			}
		})
	}
}

// TestKustomizeDryRun renders config/default, dry-runs it against the API
// server, and checks that it installs the same objects as the chart with
// default values: the same names, the same RBAC rules and the same pod specs.
func TestKustomizeDryRun(t *testing.T) {
	dir := filepath.Join(tl.root, "config")
	var missing []string
	for _, role := range []string{"manager", "agent"} {
		if !fileExists(filepath.Join(dir, "rbac", role+"_role.yaml")) {
			missing = append(missing, role)
		}
	}
	if len(missing) > 0 {
		// Until the kubebuilder rbac markers exist, render a copy of config/
		// completed with the chart's copies of the roles.
		tmp := t.TempDir()
		if _, err := tl.run(nil, "cp", "-r", dir, tmp); err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(tmp, "config")
		for _, role := range missing {
			t.Logf("config/rbac/%s_role.yaml is not generated yet; using the chart's copy", role)
			if _, err := tl.run(nil, "cp", filepath.Join(tl.root, chartDir, "files/rbac", role+"_role.yaml"), filepath.Join(dir, "rbac")); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, err := tl.kubectlCmd(nil, "kustomize", filepath.Join(dir, "default"))
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	kobjs, err := parseObjects([]byte(out))
	if err != nil {
		t.Fatalf("parsing kustomize output: %v", err)
	}

	// The CRDs are installed and the namespace exists already: dry-run the rest.
	var rest []string
	var restObjs []*unstructured.Unstructured
	for _, o := range kobjs {
		if o.GetKind() == "CustomResourceDefinition" || o.GetKind() == "Namespace" {
			continue
		}
		restObjs = append(restObjs, o)
	}
	for _, o := range restObjs {
		rest = append(rest, key(o))
	}
	sort.Strings(rest)
	// Dry-run everything, CRDs and namespace included: kubectl reports them as
	// unchanged, so the whole stream must be accepted.
	dry, err := tl.dryRun([]byte(out))
	if err != nil {
		t.Fatalf("server-side dry-run of config/default: %v", err)
	}
	t.Logf("server-side dry-run of %d objects:\n%s", len(kobjs), dry)
	if n := strings.Count(dry, "(server dry run)"); n != len(kobjs) {
		t.Errorf("kubectl reported %d objects dry-run, want %d", n, len(kobjs))
	}

	// Hooks are Helm's lifecycle (CRD upgrades, uninstall cleanup): a
	// kustomize install has none.
	_, rendered := render(t, "kquant", "kquant-system")
	var hobjs []*unstructured.Unstructured
	for _, o := range rendered {
		if _, hook := o.GetAnnotations()["helm.sh/hook"]; !hook {
			hobjs = append(hobjs, o)
		}
	}
	if diff := cmp.Diff(keys(hobjs), rest); diff != "" {
		t.Fatalf("config/default and the chart install different objects (-chart +kustomize):\n%s", diff)
	}
	var crds []string
	for _, o := range kobjs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o.GetName())
		}
	}
	bases, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != len(bases) {
		t.Errorf("config/default has CRDs %v, want the %d of config/crd/bases", crds, len(bases))
	}

	km, hm := byKey(kobjs), byKey(hobjs)
	for k, h := range hm {
		ko := km[k]
		var fields [][]string
		switch h.GetKind() {
		case "ClusterRole", "Role":
			fields = [][]string{{"rules"}}
		case "ClusterRoleBinding", "RoleBinding":
			fields = [][]string{{"roleRef"}, {"subjects"}}
		case "Service":
			fields = [][]string{{"spec"}}
		case "ValidatingAdmissionPolicy":
			// The chart matches its own agent service account exactly; the rest
			// is config/policy verbatim.
			fields = [][]string{{"spec", "failurePolicy"}, {"spec", "matchConstraints"}, {"spec", "variables"}, {"spec", "validations"}}
		case "ValidatingAdmissionPolicyBinding", "ClusterQuantRecipe":
			fields = [][]string{{"spec"}}
		case "Deployment", "DaemonSet":
			fields = [][]string{{"spec", "replicas"}, {"spec", "selector"}, {"spec", "updateStrategy"}, {"spec", "template", "spec"}}
		}
		for _, f := range fields {
			want, _, _ := unstructured.NestedFieldCopy(h.Object, f...)
			got, _, _ := unstructured.NestedFieldCopy(ko.Object, f...)
			if h.GetKind() == "ValidatingAdmissionPolicy" {
				// CEL ignores whitespace, and Helm's YAML round trip folds
				// multi-line expressions slightly differently from kustomize.
				want, got = squashSpace(want), squashSpace(got)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s .%s differs (-chart +kustomize):\n%s", k, strings.Join(f, "."), diff)
			}
		}
	}
}

// squashSpace replaces every run of white space in the strings of v by one
// space.
func squashSpace(v any) any {
	switch v := v.(type) {
	case string:
		return strings.Join(strings.Fields(v), " ")
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = squashSpace(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = squashSpace(e)
		}
		return out
	}
	return v
}
