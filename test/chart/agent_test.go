// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package chart

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kquant/kquant/domain/gate"
)

// agentPod is the agent DaemonSet's pod spec and its one container.
func agentPod(t *testing.T, objs []*unstructured.Unstructured, name string) (pod, container map[string]any) {
	t.Helper()
	ds := byKey(objs)[name]
	if ds == nil {
		t.Fatalf("no %s in %v", name, keys(objs))
	}
	pod, _, _ = unstructured.NestedMap(ds.Object, "spec", "template", "spec")
	cs, _ := pod["containers"].([]any)
	if len(cs) != 1 {
		t.Fatalf("%s has %d containers, want 1", name, len(cs))
	}
	return pod, cs[0].(map[string]any)
}

// envOf is a container's plain env values by name.
func envOf(c map[string]any) map[string]string {
	out := map[string]string{}
	for _, e := range c["env"].([]any) {
		e := e.(map[string]any)
		if v, ok := e["value"]; ok {
			out[e["name"].(string)] = fmt.Sprint(v)
		}
	}
	return out
}

// TestAgentIsAnObserverByDefault: with run pods (the default), the agent
// gets NVML only, never libcuda, reads the kubelet's PodResources socket
// through a read-only hostPath as root with no capabilities, and needs no
// host PID namespace (the GPU guard runs in the run pods).
func TestAgentIsAnObserverByDefault(t *testing.T) {
	_, objs := render(t, "kquant", "kquant-system")
	pod, c := agentPod(t, objs, "DaemonSet/kquant-system/kquant-agent")
	args := fmt.Sprint(c["args"])
	for _, want := range []string{"--execution=RunPod", "--pod-resources-socket=/var/lib/kubelet/pod-resources/kubelet.sock"} {
		if !strings.Contains(args, want) {
			t.Errorf("agent args %s lack %s", args, want)
		}
	}
	env := envOf(c)
	if env["NVIDIA_DRIVER_CAPABILITIES"] != "utility" {
		t.Errorf("NVIDIA_DRIVER_CAPABILITIES = %q, want utility (no CUDA context in the observer)", env["NVIDIA_DRIVER_CAPABILITIES"])
	}
	if _, ok := env["CUDA_CACHE_PATH"]; ok {
		t.Error("the observer sets CUDA_CACHE_PATH; it runs no CUDA")
	}
	if env["NVIDIA_MIG_MONITOR_DEVICES"] != "all" {
		t.Errorf("NVIDIA_MIG_MONITOR_DEVICES = %q, want all (NVML lists every MIG device)", env["NVIDIA_MIG_MONITOR_DEVICES"])
	}
	if pod["hostPID"] != nil {
		t.Errorf("hostPID = %v: the observer needs none", pod["hostPID"])
	}
	sc := fmt.Sprint(c["securityContext"])
	for _, want := range []string{"runAsUser:0", "drop:[ALL]", "readOnlyRootFilesystem:true", "allowPrivilegeEscalation:false"} {
		if !strings.Contains(sc, want) {
			t.Errorf("agent securityContext %s lacks %s", sc, want)
		}
	}
	if mounts := fmt.Sprint(c["volumeMounts"]); !strings.Contains(mounts, "mountPath:/var/lib/kubelet/pod-resources name:pod-resources readOnly:true") {
		t.Errorf("agent volumeMounts %s lack the read-only pod-resources mount", mounts)
	}
	if vols := fmt.Sprint(pod["volumes"]); !strings.Contains(vols, "hostPath:map[path:/var/lib/kubelet/pod-resources type:Directory]") {
		t.Errorf("agent volumes %s lack the pod-resources hostPath", vols)
	}
}

// TestAgentWithoutPodResources: no hostPath, and the pod's non-root user.
func TestAgentWithoutPodResources(t *testing.T) {
	_, objs := render(t, "kquant", "kquant-system", "--set", "agent.podResources.enabled=false")
	pod, c := agentPod(t, objs, "DaemonSet/kquant-system/kquant-agent")
	if s := fmt.Sprint(c["args"], pod["volumes"], c["securityContext"]); strings.Contains(s, "pod-resources") || strings.Contains(s, "runAsUser:0") {
		t.Errorf("podResources disabled still renders the socket or root: %s", s)
	}
}

// TestAgentDRAAdminAccess: on DRA clusters the agent's NVML visibility comes
// from an adminAccess claim of every GPU, not from NVIDIA_VISIBLE_DEVICES;
// a real API server admits it in a namespace labelled for admin access.
func TestAgentDRAAdminAccess(t *testing.T) {
	const ns = "gpu-admin"
	if _, err := tl.kubectlCmd(nil, "create", "namespace", ns); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.kubectlCmd(nil, "label", "namespace", ns, "resource.kubernetes.io/admin-access=true"); err != nil {
		t.Fatal(err)
	}
	manifests, objs := render(t, "kquant", ns, "--set", "agent.draAdminAccess.enabled=true")
	pod, c := agentPod(t, objs, "DaemonSet/"+ns+"/kquant-agent")
	if _, ok := envOf(c)["NVIDIA_VISIBLE_DEVICES"]; ok {
		t.Error("NVIDIA_VISIBLE_DEVICES set beside the adminAccess claim")
	}
	if got := fmt.Sprint(pod["resourceClaims"]); got != "[map[name:gpus resourceClaimTemplateName:kquant-agent-gpus]]" {
		t.Errorf("resourceClaims = %s", got)
	}
	if got := fmt.Sprint(c["resources"]); !strings.Contains(got, "claims:[map[name:gpus]]") {
		t.Errorf("agent resources %s do not use the claim", got)
	}
	tmpl := byKey(objs)["ResourceClaimTemplate/"+ns+"/kquant-agent-gpus"]
	if tmpl == nil {
		t.Fatalf("no ResourceClaimTemplate in %v", keys(objs))
	}
	req, _, _ := unstructured.NestedSlice(tmpl.Object, "spec", "spec", "devices", "requests")
	if got := fmt.Sprint(req); got != "[map[exactly:map[adminAccess:true allocationMode:All deviceClassName:gpu.nvidia.com] name:gpus]]" {
		t.Errorf("claim requests = %s", got)
	}
	if out, err := tl.dryRun(manifests); err != nil {
		t.Fatalf("server-side dry-run: %v\n%s", err, out)
	}
}

// TestAgentExecutesWithGPUAllocationNone: the explicit opt-in for nodes
// drained of other GPU work gives the agent the CUDA driver again.
func TestAgentExecutesWithGPUAllocationNone(t *testing.T) {
	out, err := tl.helmCmd("template", "kquant", chartDir, "--namespace", "kquant-system", "--kube-version", tl.kubeVersion,
		"--set", "gpuAllocation=None", "--show-only", "templates/agent/daemonset.yaml")
	if err != nil && strings.Contains(err.Error(), "gpuAllocation") {
		t.Skip("the chart has no gpuAllocation value yet (it arrives with the run-pod controller)")
	}
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parseObjects([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	_, c := agentPod(t, objs, "DaemonSet/kquant-system/kquant-agent")
	if args := fmt.Sprint(c["args"]); !strings.Contains(args, "--execution=None") {
		t.Errorf("agent args %s lack --execution=None", args)
	}
	if env := envOf(c); env["NVIDIA_DRIVER_CAPABILITIES"] != "compute,utility" || env["CUDA_CACHE_PATH"] == "" {
		t.Errorf("agent env %v: in-agent execution needs compute and a JIT cache", env)
	}
}

// TestAgentToleratesEveryGate: a gate cannot lock itself in. The agent stays
// on a gated node, NoExecute included, whatever agent.tolerations says, and
// keeps the values' tolerations besides.
func TestAgentToleratesEveryGate(t *testing.T) {
	for _, args := range [][]string{nil, {"--set", "agent.tolerations=null"}} {
		_, objs := render(t, "kquant", "kquant-system", args...)
		pod, _ := agentPod(t, objs, "DaemonSet/kquant-system/kquant-agent")
		tolerations, _ := pod["tolerations"].([]any)
		want := []any{}
		for _, tt := range gate.Tolerations() {
			want = append(want, map[string]any{"key": tt.Key, "operator": string(tt.Operator)})
		}
		if args == nil {
			want = append(want, map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"})
		}
		if diff := cmp.Diff(want, tolerations); diff != "" {
			t.Errorf("agent tolerations with %v (-want +got):\n%s", args, diff)
		}
	}
}
