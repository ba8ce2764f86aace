// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runpod

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/gate"
	"github.com/kquant/kquant/test/builders"
)

func boundRun() *kquantv1alpha1.QuantRun {
	run := builders.MakeQuantRun("mxfp8-check-0-0", "team-a", "mxfp8-check").Bound("gpu-node-1", 2).Obj()
	run.UID = types.UID("run-uid")
	return run
}

func config(a Allocation) Config {
	return Config{Allocation: a, Image: "registry.local/kquant-agent:v0.4.0", ServiceAccountName: "kquant-run"}
}

func TestBuildDevicePluginPod(t *testing.T) {
	run := boundRun()
	cfg := config(AllocationDevicePlugin)
	cfg.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	cfg.Tolerations = []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	cfg.ExtraArgs = []string{"-v=1"}
	cfg.ImagePullSecrets = []string{"registry-cred"}

	got, err := Build(run, GPU{UUID: run.Spec.GPUUUID}, cfg)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	want := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "mxfp8-check-0-0",
			Namespace: "team-a",
			Labels: map[string]string{
				"app.kubernetes.io/name":      "kquant",
				"app.kubernetes.io/component": "run",
				"kquant.dev/run":              "mxfp8-check-0-0",
				"kquant.dev/job":              "mxfp8-check",
				"kquant.dev/node":             "gpu-node-1",
			},
			Annotations: map[string]string{AnnotationGPU: run.Spec.GPUUUID},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "kquant.dev/v1alpha1", Kind: "QuantRun", Name: "mxfp8-check-0-0", UID: "run-uid",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			ServiceAccountName:           "kquant-run",
			ImagePullSecrets:             []corev1.LocalObjectReference{{Name: "registry-cred"}},
			AutomountServiceAccountToken: ptr.To(true),
			EnableServiceLinks:           ptr.To(false),
			PriorityClassName:            DefaultPriorityClassName,
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu-node-1"}}},
				}}},
			}},
			Tolerations: append(cfg.Tolerations, gate.Tolerations()...),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            "run",
				Image:           "registry.local/kquant-agent:v0.4.0",
				ImagePullPolicy: corev1.PullIfNotPresent,
				Args:            []string{"run", "--run=team-a/mxfp8-check-0-0", "--allocation=DevicePlugin", "-v=1"},
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
					{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
					{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
					{Name: "NVIDIA_DRIVER_CAPABILITIES", Value: "compute,utility"},
					{Name: "CUDA_CACHE_PATH", Value: "/tmp/cuda-cache"},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
					Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
				},
				VolumeMounts:             []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext: &corev1.SecurityContext{
					Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	if diff := cmp.Diff(want, got.Pod); diff != "" {
		t.Errorf("pod (-want +got):\n%s", diff)
	}
	if got.Claim != nil {
		t.Errorf("device-plugin run got a claim: %+v", got.Claim)
	}
	if cfg.Resources.Limits != nil {
		t.Errorf("Build wrote into the caller's resources: %v", cfg.Resources.Limits)
	}
}

func TestBuildAllocations(t *testing.T) {
	tests := []struct {
		name          string
		gpu           GPU
		cfg           Config
		wantLimits    corev1.ResourceList
		wantClaim     *resourcev1.ExactDeviceRequest
		wantPodClaims []corev1.PodResourceClaim
		wantErr       error
	}{
		{
			name:       "device plugin, whole GPU",
			gpu:        GPU{UUID: "GPU-1111"},
			cfg:        config(AllocationDevicePlugin),
			wantLimits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
		},
		{
			name:       "device plugin, MIG slice asks for its profile",
			gpu:        GPU{UUID: "MIG-2222", MIGProfile: "1g.10gb"},
			cfg:        config(AllocationDevicePlugin),
			wantLimits: corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("1")},
		},
		{
			name:       "device plugin, the kubelet picks when no UUID is known",
			cfg:        config(AllocationDevicePlugin),
			wantLimits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
		},
		{
			name:       "DRA pins the GPU by UUID",
			gpu:        GPU{UUID: "GPU-1111"},
			cfg:        config(AllocationDRA),
			wantLimits: corev1.ResourceList{},
			wantClaim: &resourcev1.ExactDeviceRequest{
				DeviceClassName: "gpu.nvidia.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
					Expression: `device.attributes["gpu.nvidia.com"].uuid == "GPU-1111"`}}},
			},
			wantPodClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("mxfp8-check-0-0-gpu")}},
		},
		{
			name: "DRA with a test driver's class and domain, MIG slice",
			gpu:  GPU{UUID: "MIG-2222", MIGProfile: "1g.10gb"},
			cfg: func() Config {
				c := config(AllocationDRA)
				c.MIGDeviceClassName, c.UUIDAttributeDomain = "mig.test.kquant.dev", "test.kquant.dev"
				return c
			}(),
			wantLimits: corev1.ResourceList{},
			wantClaim: &resourcev1.ExactDeviceRequest{
				DeviceClassName: "mig.test.kquant.dev", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
					Expression: `device.attributes["test.kquant.dev"].uuid == "MIG-2222"`}}},
			},
			wantPodClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("mxfp8-check-0-0-gpu")}},
		},
		{name: "DRA without a UUID", cfg: config(AllocationDRA), wantErr: ErrInvalidInput},
		{name: "DRA refuses a UUID that is not one", gpu: GPU{UUID: `x" || true || "`}, cfg: config(AllocationDRA), wantErr: ErrInvalidInput},
		{name: "None has no run pod", gpu: GPU{UUID: "GPU-1111"}, cfg: config(AllocationNone), wantErr: ErrNoRunPod},
		{name: "unknown allocation", cfg: config("Magic"), wantErr: ErrInvalidInput},
		{name: "no image", cfg: Config{Allocation: AllocationDevicePlugin}, wantErr: ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := boundRun()
			got, err := Build(run, tt.gpu, tt.cfg)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Build error = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				return
			}
			ctr := got.Pod.Spec.Containers[0]
			if diff := cmp.Diff(tt.wantLimits, ctr.Resources.Limits); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantPodClaims, got.Pod.Spec.ResourceClaims); diff != "" {
				t.Errorf("pod resourceClaims (-want +got):\n%s", diff)
			}
			if tt.wantClaim == nil {
				if got.Claim != nil {
					t.Errorf("got claim %+v, want none", got.Claim)
				}
				return
			}
			if diff := cmp.Diff([]corev1.ResourceClaim{{Name: "gpu"}}, ctr.Resources.Claims); diff != "" {
				t.Errorf("container claims (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]resourcev1.DeviceRequest{{Name: "gpu", Exactly: tt.wantClaim}}, got.Claim.Spec.Devices.Requests); diff != "" {
				t.Errorf("claim requests (-want +got):\n%s", diff)
			}
			if got.Claim.Name != *got.Pod.Spec.ResourceClaims[0].ResourceClaimName || got.Claim.Namespace != run.Namespace {
				t.Errorf("claim %s/%s is not the pod's", got.Claim.Namespace, got.Claim.Name)
			}
			if diff := cmp.Diff(got.Pod.OwnerReferences, got.Claim.OwnerReferences); diff != "" {
				t.Errorf("claim owner differs from the pod's (-pod +claim):\n%s", diff)
			}
		})
	}
}

// TestBuildNeverBypassesTheKubelet checks, for every allocation, what must
// never appear in a run pod, whatever else changes.
func TestBuildNeverBypassesTheKubelet(t *testing.T) {
	for _, a := range []Allocation{AllocationDevicePlugin, AllocationDRA} {
		t.Run(string(a), func(t *testing.T) {
			cfg := config(a)
			cfg.KueueQueueName = "benchmarks"
			got, err := Build(boundRun(), GPU{UUID: "GPU-1111"}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			spec := got.Pod.Spec
			if spec.NodeName != "" {
				t.Errorf("nodeName = %q: bypasses the scheduler", spec.NodeName)
			}
			if spec.HostPID || spec.HostNetwork || spec.HostIPC {
				t.Error("run pod shares a host namespace")
			}
			for _, e := range spec.Containers[0].Env {
				if strings.HasPrefix(e.Name, "NVIDIA_VISIBLE_DEVICES") || e.Name == "CUDA_VISIBLE_DEVICES" {
					t.Errorf("run pod sets %s", e.Name)
				}
			}
			if got.Pod.Labels[LabelKueueQueue] != "benchmarks" {
				t.Errorf("labels %v lack the Kueue queue", got.Pod.Labels)
			}
		})
	}
}

func TestNamesStayValid(t *testing.T) {
	run := boundRun()
	run.Name = strings.Repeat("r", 253)
	if got := len(ClaimName(run)); got > 253 {
		t.Errorf("claim name has %d characters", got)
	}
	if got := len(Labels(run)[LabelRun]); got > 63 {
		t.Errorf("run label value has %d characters", got)
	}
}

// TestPriorityClass: a run pod takes the run class, an idle validation's
// the idle one, the lowest; both never preempt and are never the default.
func TestPriorityClass(t *testing.T) {
	idle := boundRun()
	idle.Labels[kquantv1alpha1.LabelIdleValidation] = "true"
	cases := []struct {
		name      string
		run       *kquantv1alpha1.QuantRun
		wantName  string
		wantValue int32
	}{
		{name: "run", run: boundRun(), wantName: DefaultPriorityClassName, wantValue: PriorityValue},
		{name: "idle validation", run: idle, wantName: DefaultIdlePriorityClassName, wantValue: math.MinInt32},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pc := PriorityClassFor(tc.run, Config{})
			if pc.Name != tc.wantName || pc.Value != tc.wantValue || pc.GlobalDefault {
				t.Errorf("PriorityClass = %s value %d globalDefault %v", pc.Name, pc.Value, pc.GlobalDefault)
			}
			if pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptNever {
				t.Errorf("preemptionPolicy = %v, want Never", pc.PreemptionPolicy)
			}
			objs, err := Build(tc.run, GPU{UUID: tc.run.Spec.GPUUUID}, config(AllocationDevicePlugin))
			if err != nil {
				t.Fatal(err)
			}
			if got := objs.Pod.Spec.PriorityClassName; got != tc.wantName {
				t.Errorf("run pod's priorityClassName = %s, want %s", got, tc.wantName)
			}
			if got, want := kquantv1alpha1.IsIdleValidation(objs.Pod), kquantv1alpha1.IsIdleValidation(tc.run); got != want {
				t.Errorf("run pod labelled as an idle validation: %t, want %t", got, want)
			}
			if idle, grace := kquantv1alpha1.IsIdleValidation(tc.run), objs.Pod.Spec.TerminationGracePeriodSeconds; idle != (grace != nil) ||
				idle && *grace != IdleTerminationGracePeriodSeconds {
				t.Errorf("run pod's terminationGracePeriodSeconds = %v", grace)
			}
			if idle, exits := kquantv1alpha1.IsIdleValidation(tc.run), slices.Contains(objs.Pod.Spec.Containers[0].Args, ArgExitOnSIGTERM); idle != exits {
				t.Errorf("run pod's args %v: %s present %t, want %t", objs.Pod.Spec.Containers[0].Args, ArgExitOnSIGTERM, exits, idle)
			}
		})
	}
}
