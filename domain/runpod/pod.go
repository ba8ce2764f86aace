// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runpod

import (
	"fmt"
	"maps"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/gate"
	"github.com/kquant/kquant/domain/quantrun"
)

// runAsUser is the images' non-root user (distroless "nonroot").
const runAsUser int64 = 65532

// maxNameLength is the longest object name the API server takes.
const maxNameLength = 253

// safeUUID is what a GPU or MIG UUID may contain. The UUID goes into a CEL
// expression, so anything else is refused rather than quoted.
var safeUUID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9/-]*$`)

// Objects are what executes a run: its pod and, for DRA, its claim (nil
// otherwise). Create the claim first: the pod refers to it by name.
type Objects struct {
	Pod   *corev1.Pod
	Claim *resourcev1.ResourceClaim
}

// PodName is the run pod's deterministic name: the run's own, so a stale
// cache that creates it twice gets AlreadyExists, and `kubectl get pod <run>`
// finds it. Run names are already unique within the namespace and at most
// 253 characters.
func PodName(run *kquantv1alpha1.QuantRun) string { return run.Name }

// ClaimName is the run's DRA ResourceClaim's name: <run>-gpu.
func ClaimName(run *kquantv1alpha1.QuantRun) string {
	const suffix = "-gpu"
	name := run.Name
	if len(name)+len(suffix) > maxNameLength {
		name = name[:maxNameLength-len(suffix)]
	}
	return name + suffix
}

// Args are the run pod's arguments to the agent binary: run mode, and the
// run by namespace/name. The run pod reads everything else from the run.
// An idle validation's pod also exits at once on SIGTERM (ArgExitOnSIGTERM):
// a preempting workload waits for that exit, and the manager records the
// run from the pod's DisruptionTarget condition, so the pod's own final
// write buys nothing there.
func Args(run *kquantv1alpha1.QuantRun) []string {
	args := []string{"run", "--run=" + run.Namespace + "/" + run.Name}
	if kquantv1alpha1.IsIdleValidation(run) {
		args = append(args, ArgExitOnSIGTERM)
	}
	return args
}

// ArgExitOnSIGTERM makes a run pod exit at once on SIGTERM, without the
// final status write it otherwise makes.
const ArgExitOnSIGTERM = "--exit-on-sigterm"

// Labels are the run pod's (and claim's) labels, linking it to its run and
// job. The selector the controller watches run pods with is
// app.kubernetes.io/component=run.
func Labels(run *kquantv1alpha1.QuantRun) map[string]string {
	job := run.Labels[kquantv1alpha1.LabelJob]
	if job == "" {
		job = quantrun.JobLabelValue(run.Spec.JobRef.Name)
	}
	return map[string]string{
		"app.kubernetes.io/name": "kquant",
		LabelComponent:           ComponentRun,
		LabelRun:                 quantrun.JobLabelValue(run.Name), // the same shortening as job names
		kquantv1alpha1.LabelJob:  job,
		kquantv1alpha1.LabelNode: run.Spec.NodeName,
	}
}

// Build returns the objects that execute run on gpu, as cfg says. The run
// must be bound (spec.nodeName set).
func Build(run *kquantv1alpha1.QuantRun, gpu GPU, cfg Config) (Objects, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.Allocation == AllocationNone:
		return Objects{}, ErrNoRunPod
	case cfg.Allocation != AllocationDevicePlugin && cfg.Allocation != AllocationDRA:
		return Objects{}, fmt.Errorf("%w: unknown allocation %q", ErrInvalidInput, cfg.Allocation)
	case run.Spec.NodeName == "":
		return Objects{}, fmt.Errorf("%w: run %s/%s is not bound to a node", ErrInvalidInput, run.Namespace, run.Name)
	case cfg.Image == "":
		return Objects{}, fmt.Errorf("%w: no agent image", ErrInvalidInput)
	case cfg.Allocation == AllocationDRA && !safeUUID.MatchString(gpu.UUID):
		return Objects{}, fmt.Errorf("%w: DRA needs the GPU's UUID, got %q", ErrInvalidInput, gpu.UUID)
	}

	owner := *metav1.NewControllerRef(run, kquantv1alpha1.GroupVersion.WithKind("QuantRun"))
	pod := basePod(run, owner, cfg)
	var objs Objects
	switch cfg.Allocation {
	case AllocationDevicePlugin:
		resourceName := corev1.ResourceName(cfg.GPUResourceName)
		if gpu.MIGProfile != "" {
			resourceName = corev1.ResourceName(cfg.MIGResourcePrefix + gpu.MIGProfile)
		}
		// Extended resources are limits only; the API server copies them to
		// requests.
		ctr := &pod.Spec.Containers[0]
		ctr.Resources.Limits[resourceName] = resource.MustParse("1")
	case AllocationDRA:
		claim := buildClaim(run, gpu, owner, cfg)
		pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: claimReference, ResourceClaimName: ptr.To(claim.Name)}}
		pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: claimReference}}
		objs.Claim = claim
	}
	if gpu.UUID != "" {
		pod.Annotations = map[string]string{AnnotationGPU: gpu.UUID}
	}
	objs.Pod = pod
	return objs, nil
}

// IdleTerminationGracePeriodSeconds is an idle validation's run pod's
// termination grace period, against the default 30 s of other run pods: a
// workload that preempts the pod waits for its exit, so the grace is that
// workload's worst extra wait, and the budget for it is a pod start
// (about 1 s). The run loses nothing by the kill: its outcome (RunPodLost) is
// recorded from the pod's DisruptionTarget condition whether or not the
// pod's own final write landed first. The kubelet still gives a container
// at least 2 s of SIGTERM (its minimumGracePeriodInSeconds), which is why
// the pod also exits at once on SIGTERM (ArgExitOnSIGTERM).
const IdleTerminationGracePeriodSeconds int64 = 1

// AnnotationGPU on a run pod is the GPU (or MIG device) UUID the run was
// bound to: what DRA pins, and what the device plugin may or may not pick.
const AnnotationGPU = "kquant.dev/gpu-uuid"

// basePod is the pod common to both allocations, without its GPU.
func basePod(run *kquantv1alpha1.QuantRun, owner metav1.OwnerReference, cfg Config) *corev1.Pod {
	labels := Labels(run)
	if cfg.KueueQueueName != "" {
		labels[LabelKueueQueue] = cfg.KueueQueueName
	}
	var grace *int64
	if kquantv1alpha1.IsIdleValidation(run) {
		// kubectl get pods -l kquant.dev/idle-validation=true finds them.
		labels[kquantv1alpha1.LabelIdleValidation] = "true"
		grace = ptr.To(IdleTerminationGracePeriodSeconds)
	}
	resources := *cfg.Resources.DeepCopy()
	if resources.Limits == nil {
		resources.Limits = corev1.ResourceList{}
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            PodName(run),
			Namespace:       run.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: corev1.PodSpec{
			// A run is one attempt; a failed pod fails the run, and the job
			// controller decides on a new attempt.
			RestartPolicy: corev1.RestartPolicyNever,
			// A preempting workload waits for this pod's exit.
			TerminationGracePeriodSeconds: grace,
			ServiceAccountName:            cfg.ServiceAccountName,
			ImagePullSecrets:              pullSecrets(cfg.ImagePullSecrets),
			// The run pod writes its run's status with its own token.
			AutomountServiceAccountToken: ptr.To(true),
			EnableServiceLinks:           ptr.To(false),
			PriorityClassName:            PriorityClassFor(run, cfg).Name,
			Affinity:                     nodeAffinity(run.Spec.NodeName),
			// Gated nodes stay open to validation: a later pass clears the gate.
			Tolerations: append(append([]corev1.Toleration(nil), cfg.Tolerations...), gate.Tolerations()...),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(runAsUser),
				RunAsGroup:     ptr.To(runAsUser),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           cfg.Image,
				ImagePullPolicy: cfg.ImagePullPolicy,
				// --allocation: how the kubelet gave the GPU, which the run
				// records in status.allocatedGPU.source.
				Args:         append(append(Args(run), "--allocation="+string(cfg.Allocation)), cfg.ExtraArgs...),
				Env:          env(),
				Resources:    resources,
				VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
				// A run pod that ran its run leaves the outcome here
				// (internal/runoutcome: "<Reason>: <message>", then the
				// results that fit), for PodOutcome; the logs' tail
				// stands in when it could write nothing.
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext: &corev1.SecurityContext{
					Privileged:               ptr.To(false),
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			// The only writable place: CUDA's JIT cache of the embedded PTX.
			Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
}

// nodeAffinity pins the pod to node through the scheduler: metadata.name is
// the node's exact name (the DaemonSet controller's pin), where the
// kubernetes.io/hostname label may differ from it.
func nodeAffinity(node string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{
					Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node},
				}},
			}},
		},
	}}
}

// env gives the run its own identity and the driver capabilities it needs.
// NVIDIA_VISIBLE_DEVICES is never set: the kubelet's allocation decides
// which GPU the container sees.
func env() []corev1.EnvVar {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return []corev1.EnvVar{
		field("POD_NAME", "metadata.name"),
		field("POD_NAMESPACE", "metadata.namespace"),
		field("POD_UID", "metadata.uid"),
		field("NODE_NAME", "spec.nodeName"),
		// The agent image defaults to utility (NVML only) for the DaemonSet;
		// a run needs the CUDA driver too. Capabilities widen what the
		// toolkit mounts, never which GPUs.
		{Name: "NVIDIA_DRIVER_CAPABILITIES", Value: "compute,utility"},
		// The root filesystem is read-only; CUDA's JIT cache goes to /tmp.
		{Name: "CUDA_CACHE_PATH", Value: "/tmp/cuda-cache"},
	}
}

// buildClaim pins the run's GPU with a CEL selector on its UUID.
func buildClaim(run *kquantv1alpha1.QuantRun, gpu GPU, owner metav1.OwnerReference, cfg Config) *resourcev1.ResourceClaim {
	class := cfg.DeviceClassName
	if gpu.MIGProfile != "" {
		class = cfg.MIGDeviceClassName
	}
	return &resourcev1.ResourceClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: "ResourceClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            ClaimName(run),
			Namespace:       run.Namespace,
			Labels:          maps.Clone(Labels(run)),
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{
				Name: claimReference,
				Exactly: &resourcev1.ExactDeviceRequest{
					DeviceClassName: class,
					AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
					Count:           1,
					Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
						Expression: UUIDSelector(cfg.UUIDAttributeDomain, gpu.UUID),
					}}},
				},
			}},
		}},
	}
}

// UUIDSelector is the CEL expression that selects the device with uuid in
// domain's attributes.
func UUIDSelector(domain, uuid string) string {
	return fmt.Sprintf("device.attributes[%q].uuid == %q", domain, uuid)
}

// pullSecrets references the named Secrets of the run's namespace; nil for
// none, so that a pod without pull secrets keeps an empty spec.
func pullSecrets(names []string) []corev1.LocalObjectReference {
	var out []corev1.LocalObjectReference
	for _, n := range names {
		out = append(out, corev1.LocalObjectReference{Name: n})
	}
	return out
}
