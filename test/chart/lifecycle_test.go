// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kquant/kquant/domain/gate"
)

// The default install upgrades its CRDs before every upgrade, cleans its
// marks off the nodes after a delete, extends view/edit/admin, and ships the
// recipe catalog.
func TestLifecycleDefaults(t *testing.T) {
	_, objs := render(t, "kquant", "kquant-system")
	m := byKey(objs)
	str := func(o *unstructured.Unstructured, path ...string) string {
		if o == nil {
			return "<missing>"
		}
		v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
		return fmt.Sprint(v)
	}
	hook := func(k string) string { return str(m[k], "metadata", "annotations", "helm.sh/hook") }
	for k, want := range map[string]string{
		"Job/kquant-system/kquant-crd-upgrade": "pre-upgrade",
		"Job/kquant-system/kquant-uninstall":   "post-delete",
		"ClusterRole/kquant-uninstall":         "post-delete",
		"Role/kquant-system/kquant-uninstall":  "post-delete",
	} {
		if got := hook(k); got != want {
			t.Errorf("%s helm.sh/hook = %s, want %s", k, got, want)
		}
	}
	crdJob := m["Job/kquant-system/kquant-crd-upgrade"]
	ccs, _, _ := unstructured.NestedSlice(crdJob.Object, "spec", "template", "spec", "containers")
	if c := ccs[0].(map[string]any); fmt.Sprint(c["args"]) != "[--apply-crds=/crds]" || !strings.HasPrefix(fmt.Sprint(c["image"]), "ghcr.io/kquant/kquant-manager:") {
		t.Errorf("CRD upgrade job runs %v %v, want the manager image with --apply-crds=/crds", c["image"], c["args"])
	}
	job := m["Job/kquant-system/kquant-uninstall"]
	cs, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "containers")
	args := fmt.Sprint(cs[0].(map[string]any)["args"])
	for _, want := range []string{"--uninstall", "--lease-namespace=kquant-system",
		"--uninstall-pod-selector=app.kubernetes.io/instance=kquant,app.kubernetes.io/component in (manager,agent)", "--uninstall-timeout=5m"} {
		if !strings.Contains(args, want) {
			t.Errorf("uninstall job args %s lack %s", args, want)
		}
	}
	if img := fmt.Sprint(cs[0].(map[string]any)["image"]); !strings.HasPrefix(img, "ghcr.io/kquant/kquant-manager:") {
		t.Errorf("uninstall job image = %s, want the manager's", img)
	}
	// The hook removes the gates' taints, so it tolerates every one of them.
	tolerations, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "tolerations")
	for _, tt := range gate.Tolerations() {
		want := map[string]any{"key": tt.Key, "operator": string(tt.Operator)}
		if !slices.ContainsFunc(tolerations, func(got any) bool { return cmp.Equal(got, want) }) {
			t.Errorf("uninstall job tolerations %v lack %v", tolerations, want)
		}
	}

	for k, label := range map[string]string{
		"ClusterRole/kquant-view": "rbac.authorization.k8s.io/aggregate-to-view",
		"ClusterRole/kquant-edit": "rbac.authorization.k8s.io/aggregate-to-edit",
	} {
		if got := str(m[k], "metadata", "labels", label); got != "true" {
			t.Errorf("%s label %s = %s, want true", k, label, got)
		}
	}

	// Creating QuantGatePolicies changes Nodes: the platform-admin role is
	// never aggregated into a namespace role.
	for label := range m["ClusterRole/kquant-platform-admin"].GetLabels() {
		if strings.HasPrefix(label, "rbac.authorization.k8s.io/aggregate-to-") {
			t.Errorf("ClusterRole/kquant-platform-admin is aggregated (%s)", label)
		}
	}

	// The catalog is recipes/ verbatim, as ClusterQuantRecipes.
	recipes, err := filepath.Glob(filepath.Join(tl.root, "recipes/*.yaml"))
	if err != nil || len(recipes) == 0 {
		t.Fatalf("no recipes: %v", err)
	}
	for _, p := range recipes {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		robjs, err := parseObjects(data)
		if err != nil || len(robjs) != 1 {
			t.Fatalf("%s: %v", p, err)
		}
		cqr := m["ClusterQuantRecipe/"+robjs[0].GetName()]
		if cqr == nil {
			t.Errorf("the catalog lacks %s", robjs[0].GetName())
			continue
		}
		if diff := cmp.Diff(robjs[0].Object["spec"], cqr.Object["spec"]); diff != "" {
			t.Errorf("ClusterQuantRecipe %s differs from %s (-recipes +chart):\n%s", robjs[0].GetName(), p, diff)
		}
	}
}

// Digests pin images; NetworkPolicies open only metrics, DNS and the API server.
func TestDigestsAndNetworkPolicy(t *testing.T) {
	_, objs := render(t, "fleet", "gpu-ops", "-f", "test/chart/testdata/nondefault-values.yaml")
	m := byKey(objs)
	ds := m["DaemonSet/gpu-ops/gpu-quant-agent"]
	cs, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
	if img, want := fmt.Sprint(cs[0].(map[string]any)["image"]), "registry.example.com/kquant/agent@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"; img != want {
		t.Errorf("agent image = %s, want %s", img, want)
	}
	// The manager's ServiceMonitor scrapes HTTPS with the scraper's token, and
	// carries the relabelings given.
	sm := fmt.Sprint(m["ServiceMonitor/gpu-ops/gpu-quant-manager"].Object["spec"])
	for _, want := range []string{"scheme:https", "bearerTokenFile:/var/run/secrets/kubernetes.io/serviceaccount/token", "insecureSkipVerify:true",
		"honorLabels:true", "targetLabel:node", "action:drop"} {
		if !strings.Contains(sm, want) {
			t.Errorf("manager ServiceMonitor %s lacks %s", sm, want)
		}
	}
	if agentSM := fmt.Sprint(m["ServiceMonitor/gpu-ops/gpu-quant-agent"].Object["spec"]); strings.Contains(agentSM, "https") {
		t.Errorf("agent ServiceMonitor %s scrapes HTTPS; the agent serves plain HTTP", agentSM)
	}
	// The dashboard is the file, for the sidecar; the rule takes noSuccessDays.
	dash := m["ConfigMap/gpu-ops/gpu-quant-dashboard"]
	if want, _ := os.ReadFile(filepath.Join(tl.root, chartDir, "files/grafana/kquant-dashboard.json")); dash == nil ||
		strings.TrimSpace(fmt.Sprint(dash.Object["data"].(map[string]any)["kquant-dashboard.json"])) != strings.TrimSpace(string(want)) || dash.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap is not files/grafana/kquant-dashboard.json labelled grafana_dashboard=1")
	}
	rule := fmt.Sprint(m["PrometheusRule/gpu-ops/gpu-quant"].Object["spec"])
	for _, want := range []string{"KquantGPUValidationFailing", "KquantGPUBandwidthOutlier", "KquantGPUNoRecentValidation", "(3 * 86400)"} {
		if !strings.Contains(rule, want) {
			t.Errorf("PrometheusRule lacks %s", want)
		}
	}
	np := m["NetworkPolicy/gpu-ops/gpu-quant-manager"]
	if np == nil {
		t.Fatalf("no manager NetworkPolicy in %v", keys(objs))
	}
	spec := fmt.Sprint(np.Object["spec"])
	for _, want := range []string{"port:9090", "kubernetes.io/metadata.name:monitoring", "port:6443", "port:53", "policyTypes:[Ingress Egress]"} {
		if !strings.Contains(spec, want) {
			t.Errorf("manager NetworkPolicy %s lacks %s", spec, want)
		}
	}
}

// The kustomize namespace pins the Pod Security level the agent needs.
func TestNamespacePodSecurity(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(tl.root, "config/default/namespace.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parseObjects(data)
	if err != nil || len(objs) != 1 {
		t.Fatalf("namespace.yaml: %v", err)
	}
	got := objs[0].GetLabels()
	for k, want := range map[string]string{
		"pod-security.kubernetes.io/enforce": "privileged",
		"pod-security.kubernetes.io/audit":   "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	} {
		if got[k] != want {
			t.Errorf("namespace label %s = %q, want %q", k, got[k], want)
		}
	}
}
