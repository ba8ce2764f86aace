// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/agent/preflight"
	"github.com/kquant/kquant/api/v1alpha1"
)

// preflightGPUs is how many simulated GPUs each preflight pod holds.
const preflightGPUs = 2

// strictRecipeFile is the mounted recipe file of the forced Fail: the
// catalog's MXFP8 measured against an SNR no recipe reaches.
const strictRecipeFile = `apiVersion: kquant.dev/v1alpha1
kind: QuantJob
metadata: {name: impossible}
spec:
  recipeRef: {name: mxfp8}
  mode: Validation
  workload:
    shapes: [{rows: 64, cols: 256}]
  tolerances: {minSNRdB: "200"}
`

// preflightInitContainer is issue 39's preflight on the real cluster: a pod
// holding 2 simulated GPUs runs `kquant-agent preflight` from the agent image
// as its init container, whose log names exactly the 2 GPUs the kubelet gave
// the pod (the ones the agent's profile shows allocated to it); with the
// kquant-preflight role bound to its service account it records each check
// as a preflight QuantRun that the manager leaves alone, and an Event on the
// pod. A second pod whose mounted recipe file asks for an impossible
// tolerance stays in Init:Error, its verdict in the termination message.
func preflightInitContainer(t *testing.T, cl *cluster) {
	ctx := t.Context()
	ns := cl.namespace(t, "e2e-preflight")
	simulated := agentSimulateSpec(t, cl)
	if err := cl.c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "preflight", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: release + "-preflight"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "strict", Namespace: ns},
		Data:       map[string]string{"recipe.yaml": strictRecipeFile},
	}); err != nil {
		t.Fatal(err)
	}

	passing := preflightPod(ns, "trainer", simulated, corev1.RestartPolicyAlways, "--recipes=mxfp8,nvfp4")
	failing := preflightPod(ns, "strict", simulated, corev1.RestartPolicyNever, "--recipes=mxfp8", "--recipe-file=/etc/kquant/recipe.yaml")
	failing.Spec.Volumes = []corev1.Volume{{Name: "recipe", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "strict"}}}}}
	failing.Spec.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "recipe", MountPath: "/etc/kquant", ReadOnly: true}}
	for _, p := range []*corev1.Pod{passing, failing} {
		if err := cl.c.Create(ctx, p); err != nil {
			t.Fatalf("creating pod %s: %v", p.Name, err)
		}
	}
	// t.Context() is cancelled before cleanups run: the pods hold every
	// simulated GPU, so their deletion must not be skipped with it.
	t.Cleanup(func() {
		for _, p := range []*corev1.Pod{passing, failing} {
			if err := cl.c.Delete(context.WithoutCancel(ctx), p, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting pod %s: %v", p.Name, err)
			}
		}
	})

	// The passing pod: its workload starts once the preflight passed.
	eventually(t, 3*time.Minute, "the trainer pod to run after its preflight", func() error {
		p := &corev1.Pod{}
		if err := cl.c.Get(ctx, client.ObjectKeyFromObject(passing), p); err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s, init %+v", p.Status.Phase, p.Status.InitContainerStatuses)
		}
		return nil
	})
	logs := cl.kubectl(t, "logs", "-n", ns, passing.Name, "-c", "preflight")
	t.Logf("preflight log of the passing pod:\n%s", logs)
	named := preflightLoggedGPUs(t, logs)
	allocated := cl.allocatedGPUs(t, ns, passing.Name)
	if len(named) != preflightGPUs || !slices.Equal(named, allocated) {
		t.Errorf("the preflight names GPUs %v, the kubelet gave the pod %v (want exactly %d)", named, allocated, preflightGPUs)
	}
	p := &corev1.Pod{}
	if err := cl.c.Get(ctx, client.ObjectKeyFromObject(passing), p); err != nil {
		t.Fatal(err)
	}
	term := p.Status.InitContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 0 {
		t.Fatalf("preflight container state %+v", p.Status.InitContainerStatuses[0].State)
	}
	if d, err := preflight.DecodeTerminationMessage(term.Message); err != nil || d.Verdict != v1alpha1.VerdictPass || !slices.Equal(sorted(d.GPUs), named) {
		t.Errorf("termination message %q: %+v, %v", term.Message, d, err)
	}

	// Its records: one preflight QuantRun per recipe and GPU, which the
	// manager never bound, and an Event on the pod.
	// (The strict pod records its own meanwhile: each run names its pod in
	// spec.jobRef.)
	var records []v1alpha1.QuantRun
	for _, r := range cl.runs(t, ns) {
		if r.Spec.JobRef.Name != passing.Name {
			continue
		}
		if r.Labels[v1alpha1.LabelPreflight] == "true" {
			records = append(records, r)
		}
		if r.Status.RunPod != nil || r.Labels[v1alpha1.LabelNode] != "" || r.Status.Phase != v1alpha1.RunPhaseSucceeded ||
			r.Status.Results == nil || r.Status.Results.Verdict != v1alpha1.VerdictPass {
			t.Errorf("preflight run %s: labels %v status %+v, want Succeeded with a Pass, untouched by the manager", r.Name, r.Labels, r.Status)
		}
	}
	if len(records) != 2*preflightGPUs {
		t.Errorf("%d preflight QuantRuns, want %d (2 recipes on %d GPUs)", len(records), 2*preflightGPUs, preflightGPUs)
	}
	events := &eventsv1.EventList{}
	if err := cl.c.List(ctx, events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
		return e.Regarding.Name == passing.Name && e.Reason == preflight.EventReasonPrefix+string(v1alpha1.VerdictPass)
	}) {
		t.Errorf("no PreflightPass Event on pod %s:\n%s", passing.Name, cl.kubectl(t, "get", "events", "-n", ns))
	}

	// The failing pod: Init:Error, the verdict in the termination message.
	eventually(t, 3*time.Minute, "the strict pod's preflight to fail", func() error {
		p := &corev1.Pod{}
		if err := cl.c.Get(ctx, client.ObjectKeyFromObject(failing), p); err != nil {
			return err
		}
		// The kubelet reports the init container's end before the pod's phase.
		if len(p.Status.InitContainerStatuses) == 0 || p.Status.InitContainerStatuses[0].State.Terminated == nil || p.Status.Phase == corev1.PodPending {
			return fmt.Errorf("phase %s, init %+v", p.Status.Phase, p.Status.InitContainerStatuses)
		}
		return nil
	})
	if err := cl.c.Get(ctx, client.ObjectKeyFromObject(failing), p); err != nil {
		t.Fatal(err)
	}
	term = p.Status.InitContainerStatuses[0].State.Terminated
	if term.ExitCode != 1 || p.Status.Phase != corev1.PodFailed {
		t.Errorf("strict pod: phase %s, preflight exit code %d, want Failed and 1", p.Status.Phase, term.ExitCode)
	}
	status := cl.kubectl(t, "get", "pod", "-n", ns, failing.Name, "--no-headers", "-o", "custom-columns=STATUS:.status.phase")
	wide := cl.kubectl(t, "get", "pod", "-n", ns, failing.Name, "--no-headers")
	if !strings.Contains(wide, "Init:Error") {
		t.Errorf("kubectl get pod shows %q (phase %s), want Init:Error", strings.TrimSpace(wide), strings.TrimSpace(status))
	}
	d, err := preflight.DecodeTerminationMessage(term.Message)
	if err != nil || d.Verdict != v1alpha1.VerdictFail || d.Reason != v1alpha1.VerdictReasonSNRBelowTolerance ||
		!strings.HasPrefix(term.Message, v1alpha1.VerdictReasonSNRBelowTolerance+": ") || len(d.GPUs) != preflightGPUs {
		t.Errorf("termination message %q: %+v, %v", term.Message, d, err)
	}
	t.Logf("the failing pod:\n%s\ntermination message:\n%s", wide, term.Message)
}

// preflightPod is a GPU workload of preflightGPUs simulated GPUs whose init
// container is the agent image in preflight mode, locked down as the
// chart's pods are.
func preflightPod(ns, name, simulated string, restart corev1.RestartPolicy, args ...string) *corev1.Pod {
	gpus := corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(preflightGPUs, resource.DecimalSI)}}
	locked := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:                 restart,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Tolerations:                   []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
				RunAsGroup: ptr.To[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			InitContainers: []corev1.Container{{
				Name: "preflight", Image: "kquant.local/kquant-agent:dev", ImagePullPolicy: corev1.PullNever,
				Args: append([]string{"preflight", "--simulate=" + simulated, "--backend=reference", "--log-format=text"}, args...),
				Env: []corev1.EnvVar{field("NODE_NAME", "spec.nodeName"), field("POD_NAMESPACE", "metadata.namespace"),
					field("POD_NAME", "metadata.name"), field("POD_UID", "metadata.uid")},
				Resources: gpus, SecurityContext: locked,
			}},
			Containers: []corev1.Container{{
				Name: "trainer", Image: "kquant.local/pause:3.10", ImagePullPolicy: corev1.PullNever,
				Resources: gpus, SecurityContext: locked,
			}},
		},
	}
}

// agentSimulateSpec is the agent's --simulate value: the GPUs the test
// device plugin advertises, which a simulated preflight must simulate too.
func agentSimulateSpec(t *testing.T, cl *cluster) string {
	t.Helper()
	agent := cl.readyPod(t, "agent", time.Minute)
	for _, c := range agent.Spec.Containers {
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--simulate="); ok {
				return v
			}
		}
	}
	t.Fatalf("the agent pod runs without --simulate: %v", agent.Spec.Containers[0].Args)
	return ""
}

// loggedGPUs matches the preflight's line naming its GPUs in text format:
// gpus="[GPU-... GPU-...]".
var loggedGPUs = regexp.MustCompile(`msg="Preflight on the GPUs the kubelet gave this pod" gpus="\[([^\]]*)\]"`)

// preflightLoggedGPUs is the GPUs the preflight's log names, sorted.
func preflightLoggedGPUs(t *testing.T, logs string) []string {
	t.Helper()
	m := loggedGPUs.FindStringSubmatch(logs)
	if m == nil {
		t.Fatalf("the preflight log names no GPUs:\n%s", logs)
	}
	return sorted(strings.Fields(m[1]))
}

// allocatedGPUs is the GPUs the agent's profile shows allocated to pod,
// sorted: what the kubelet's PodResources API says it gave the pod.
func (cl *cluster) allocatedGPUs(t *testing.T, ns, pod string) []string {
	t.Helper()
	var uuids []string
	eventually(t, 2*time.Minute, "the profile to show pod "+pod+"'s GPUs", func() error {
		p := &v1alpha1.GPUNodeProfile{}
		if err := cl.c.Get(t.Context(), client.ObjectKey{Name: node}, p); err != nil {
			return err
		}
		uuids = nil
		for _, g := range p.Status.GPUs {
			// One entry per GPU, however many of the pod's containers list it.
			if slices.ContainsFunc(g.Allocations, func(a v1alpha1.GPUAllocation) bool { return a.Namespace == ns && a.Pod == pod }) {
				uuids = append(uuids, g.UUID)
			}
		}
		if len(uuids) != preflightGPUs {
			return fmt.Errorf("%d GPUs allocated to %s/%s in the profile, want %d", len(uuids), ns, pod, preflightGPUs)
		}
		return nil
	})
	return sorted(uuids)
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
