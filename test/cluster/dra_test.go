// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/test/dradriver"
)

// envPod is a pod of the pause image that prints the GPU variables the
// runtime gave it (the pause binary prints the variables its arguments name)
// and then waits. With a claim it takes that ResourceClaim; without one,
// resources is its container's resources (the Kueue scenario's
// nvidia.com/gpu limit). labels may name a Kueue LocalQueue.
func envPod(name, claim string, labels map[string]string, resources string) string {
	var meta, claims string
	for k, v := range labels {
		meta += fmt.Sprintf("\n    %s: %q", k, v)
	}
	if meta != "" {
		meta = "\n  labels:" + meta
	}
	if claim != "" {
		resources = "{claims: [{name: gpu}]}"
		claims = fmt.Sprintf("\n  resourceClaims: [{name: gpu, resourceClaimName: %s}]", claim)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s%s
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}%s
  containers:
  - name: env
    image: kquant.local/pause:3.10
    args: [NVIDIA_VISIBLE_DEVICES, KQUANT_SIMULATED_GPUS]
    resources: %s
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`, name, meta, claims, resources)
}

// pinnedClaim is a ResourceClaim for one GPU of the local cluster's
// DeviceClass, pinned by its UUID as a DRA run pod's claim is.
func pinnedClaim(name, uuid string) string {
	return fmt.Sprintf(`apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: %s}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: %s
        selectors:
        - cel: {expression: 'device.attributes["%s"].uuid == "%s"'}
`, name, dradriver.DefaultDeviceClassName, dradriver.DefaultAttributeDomain, uuid)
}

// draPinsAGPU: a pod whose claim pins one simulated GPU by UUID gets exactly
// that GPU (the CDI spec of the test DRA driver sets NVIDIA_VISIBLE_DEVICES,
// read in the pod's log); a second claim pinned to the same GPU stays
// unallocated and its pod Pending, and runs once the first pod has ended.
func draPinsAGPU(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "e2e-dra")
	defer cl.deleteNamespace(t, ns)
	const index = 2
	uuid := simulate.UUID(node, index)
	wantEnv := fmt.Sprintf("NVIDIA_VISIBLE_DEVICES=%s\nKQUANT_SIMULATED_GPUS=%s\n", uuid, uuid)
	wantDevice := fmt.Sprintf("gpu-%d", index)

	cl.apply(t, ns, []byte(pinnedClaim("first-gpu", uuid)+"---\n"+envPod("first", "first-gpu", nil, "")), "-")
	cl.waitPodPhase(t, ns, "first", corev1.PodRunning, 2*time.Minute)
	cl.checkAllocated(t, ns, "first-gpu", wantDevice)
	cl.waitLogs(t, ns, "first", wantEnv)

	cl.apply(t, ns, []byte(pinnedClaim("second-gpu", uuid)+"---\n"+envPod("second", "second-gpu", nil, "")), "-")
	msg := cl.waitUnschedulable(t, ns, "second", time.Minute)
	claim := &resourcev1.ResourceClaim{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "second-gpu"}, claim); err != nil {
		t.Fatal(err)
	}
	if claim.Status.Allocation != nil {
		t.Fatalf("the second claim was allocated %v while its GPU is the first pod's", claim.Status.Allocation.Devices.Results)
	}
	t.Logf("second pod Pending, claim unallocated: %s", msg)

	// The first pod ends: its claim is deallocated and the second one gets the GPU.
	cl.kubectl(t, "delete", "pod", "-n", ns, "first", "--wait=true", "--timeout=2m")
	cl.waitPodPhase(t, ns, "second", corev1.PodRunning, 2*time.Minute)
	cl.checkAllocated(t, ns, "second-gpu", wantDevice)
	cl.waitLogs(t, ns, "second", wantEnv)
}

// deleteNamespace deletes ns and waits until it is gone, so that its pods'
// GPUs are free for the next scenario.
func (cl *cluster) deleteNamespace(t *testing.T, ns string) {
	t.Helper()
	cl.kubectl(t, "delete", "namespace", ns, "--wait=true", "--timeout=3m")
}

func (cl *cluster) waitPodPhase(t *testing.T, ns, name string, phase corev1.PodPhase, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("pod %s/%s %s", ns, name, phase), func() error {
		p := &corev1.Pod{}
		if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		if p.Status.Phase != phase {
			return fmt.Errorf("phase %s, conditions %v", p.Status.Phase, p.Status.Conditions)
		}
		return nil
	})
}

// waitUnschedulable waits for the scheduler to report that pod cannot be
// scheduled, and returns its message.
func (cl *cluster) waitUnschedulable(t *testing.T, ns, name string, timeout time.Duration) string {
	t.Helper()
	var msg string
	eventually(t, timeout, fmt.Sprintf("pod %s/%s Unschedulable", ns, name), func() error {
		p := &corev1.Pod{}
		if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodPending {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				msg = c.Message
				return nil
			}
		}
		return fmt.Errorf("conditions %v", p.Status.Conditions)
	})
	return msg
}

// checkAllocated checks that the claim got exactly the test DRA driver's
// device on this node.
func (cl *cluster) checkAllocated(t *testing.T, ns, name, device string) {
	t.Helper()
	claim := &resourcev1.ResourceClaim{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, claim); err != nil {
		t.Fatal(err)
	}
	if claim.Status.Allocation == nil {
		t.Fatalf("claim %s is not allocated", name)
	}
	r := claim.Status.Allocation.Devices.Results
	if len(r) != 1 || r[0].Driver != dradriver.DefaultDriverName || r[0].Pool != node || r[0].Device != device {
		t.Fatalf("claim %s allocated %+v, want %s/%s/%s", name, r, dradriver.DefaultDriverName, node, device)
	}
}

// waitLogs waits until the pod's log is exactly want.
func (cl *cluster) waitLogs(t *testing.T, ns, name, want string) {
	t.Helper()
	var logs string
	eventually(t, 30*time.Second, fmt.Sprintf("pod %s/%s's log", ns, name), func() error {
		logs = cl.kubectl(t, "logs", "-n", ns, name)
		if logs != want {
			return fmt.Errorf("log %q, want %q", logs, want)
		}
		return nil
	})
	t.Logf("pod %s: %s", name, strings.TrimSpace(strings.ReplaceAll(logs, "\n", "; ")))
}
