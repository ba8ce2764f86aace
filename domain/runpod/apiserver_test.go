// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runpod_test

import (
	"fmt"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

// TestAPIServerAdmitsRunPods creates what Build returns on a real
// kube-apiserver, in a namespace that enforces the restricted PodSecurity
// level: the pod passes the API server's validation and PodSecurity, the
// PriorityClass and the Priority admission plugin agree, and the DRA claim's
// CEL selector compiles.
func TestAPIServerAdmitsRunPods(t *testing.T) {
	env := testenv.ForTest(t)
	ctx, c := t.Context(), env.Client

	if err := c.Create(ctx, runpod.PriorityClass("")); err != nil {
		t.Fatalf("creating PriorityClass: %v", err)
	}
	tests := []struct {
		name string
		gpu  runpod.GPU
		cfg  runpod.Config
	}{
		{name: "device-plugin", gpu: runpod.GPU{UUID: "GPU-0a1b2c3d-0000-1111-2222-333344445555"}},
		{name: "device-plugin-mig", gpu: runpod.GPU{UUID: "MIG-0a1b2c3d-0000-1111-2222-333344445555", MIGProfile: "1g.10gb"}},
		{name: "dra", gpu: runpod.GPU{UUID: "GPU-0a1b2c3d-0000-1111-2222-333344445555"}, cfg: runpod.Config{Allocation: runpod.AllocationDRA}},
		{name: "dra-mig", gpu: runpod.GPU{UUID: "MIG-0a1b2c3d-0000-1111-2222-333344445555", MIGProfile: "1g.10gb"},
			cfg: runpod.Config{Allocation: runpod.AllocationDRA}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := fmt.Sprintf("runpod-%d", i)
			if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
				"pod-security.kubernetes.io/enforce": "restricted"}}}); err != nil {
				t.Fatal(err)
			}
			if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kquant-run", Namespace: ns}}); err != nil {
				t.Fatal(err)
			}
			run := builders.MakeQuantRun("mxfp8-check-0-0", ns, "mxfp8-check").Bound("gpu-node-1", 0).Obj()
			if err := c.Create(ctx, run); err != nil {
				t.Fatalf("creating QuantRun: %v", err)
			}
			cfg := tt.cfg
			if cfg.Allocation == "" {
				cfg.Allocation = runpod.AllocationDevicePlugin
			}
			cfg.Image, cfg.ServiceAccountName = "registry.local/kquant-agent:v0.4.0", "kquant-run"
			objs, err := runpod.Build(run, tt.gpu, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if objs.Claim != nil {
				if err := c.Create(ctx, objs.Claim); err != nil {
					t.Fatalf("creating ResourceClaim: %v", err)
				}
			}
			if err := c.Create(ctx, objs.Pod); err != nil {
				t.Fatalf("creating run pod: %v", err)
			}
			if i == 0 {
				checksHaveTeeth(t, env, objs)
			}
			if objs.Pod.Spec.Priority == nil || *objs.Pod.Spec.Priority != runpod.PriorityValue ||
				objs.Pod.Spec.PreemptionPolicy == nil || *objs.Pod.Spec.PreemptionPolicy != corev1.PreemptNever {
				t.Errorf("admitted pod priority %v preemptionPolicy %v, want %d and Never",
					objs.Pod.Spec.Priority, objs.Pod.Spec.PreemptionPolicy, runpod.PriorityValue)
			}
		})
	}
}

// checksHaveTeeth shows that the API server would refuse what the run pods
// must not be: a pod that may run as root (PodSecurity restricted), and a
// claim whose selector does not compile.
func checksHaveTeeth(t *testing.T, env *testenv.Env, objs runpod.Objects) {
	t.Helper()
	rootPod := objs.Pod.DeepCopy()
	rootPod.Name, rootPod.ResourceVersion, rootPod.UID = rootPod.Name+"-root", "", ""
	rootPod.Spec.SecurityContext.RunAsNonRoot = ptr.To(false)
	rootPod.Spec.SecurityContext.RunAsUser = ptr.To[int64](0)
	if err := env.Client.Create(t.Context(), rootPod); err == nil {
		t.Error("a root pod was admitted to the restricted namespace: PodSecurity is not enforced, the test proves nothing")
	}
	bad := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "bad-selector", Namespace: objs.Pod.Namespace},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: runpod.DefaultDeviceClassName,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["gpu.nvidia.com"].uuid ==`}}}},
		}}}},
	}
	if err := env.Client.Create(t.Context(), bad); err == nil {
		t.Error("a claim with a broken CEL selector was admitted: selectors are not compiled, the test proves nothing")
	}
}
