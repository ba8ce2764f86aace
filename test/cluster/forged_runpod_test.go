// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/execution"
	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/test/builders"
)

// forgedRunPods attacks a run's result with real tokens, no impersonation
// where a token is the point:
//   - a tenant (a ServiceAccount bound to edit in its namespace, with a token
//     from the TokenRequest API) cannot create a pod that runs as kquant-run,
//     named like its job's next run, and is told why;
//   - a pod that does run as kquant-run and is named like a run, but is not
//     the pod the run records (status.runPod), cannot write the run's status
//     with the token the kubelet projected into it. Only the manager may
//     create such a pod at all, so the test makes it as the manager would
//     (impersonating the manager's ServiceAccount, as a compromised manager
//     or a pod from before the creation policy could); the run records
//     another pod's UID, as after the manager made the real one.
func forgedRunPods(t *testing.T, cl *cluster) {
	ctx := t.Context()
	ns := cl.namespace(t, "e2e-forged-run-pod")
	const runName = "forged-0-0"

	// What the manager leaves in a namespace that has had runs: the run
	// ServiceAccount and its binding to the run ClusterRole.
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: execution.DefaultServiceAccountName, Namespace: ns}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: execution.DefaultServiceAccountName, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: release + "-run"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: execution.DefaultServiceAccountName, Namespace: ns}},
		},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Namespace: ns}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "tenant-edit", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "tenant", Namespace: ns}},
		},
	} {
		if err := cl.c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	// The run: running, and recording the pod the manager made for it. It
	// is bound to no GPU, so that no controller acts on it meanwhile.
	run := builders.MakeQuantRun(runName, ns, "forged").Obj()
	if err := cl.c.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	run.Status = v1alpha1.QuantRunStatus{Phase: v1alpha1.RunPhaseRunning,
		RunPod: &v1alpha1.RunPodReference{Name: runName, UID: "0f0f0f0f-0000-4000-8000-000000000001"}}
	if err := cl.c.Status().Update(ctx, run); err != nil {
		t.Fatal(err)
	}

	// The tenant's pod, with a token of its own.
	tenant := cl.tokenClient(t, strings.TrimSpace(cl.kubectl(t, "create", "token", "tenant", "-n", ns)))
	tenantPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "forged-0-1", Namespace: ns},
		Spec: corev1.PodSpec{ServiceAccountName: execution.DefaultServiceAccountName, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "run", Image: cl.runImage(t), Args: []string{"--help"}}}},
	}
	err := tenant.Create(ctx, tenantPod)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only the kquant manager may create pods that run as the kquant-run ServiceAccount") {
		t.Errorf("a tenant's pod running as kquant-run: %v, want the run-pod creation policy's refusal", err)
	}

	// The pod named like the run, as the manager would make it; it restarts
	// its container forever, so that the kubelet keeps its token mounted.
	forged := cl.forgedRunPod(t, run)
	asManager := rest.CopyConfig(cl.config)
	asManager.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + systemNamespace + ":" + release + "-manager"}
	manager, err := client.New(asManager, client.Options{Scheme: cl.c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := manager.Create(ctx, forged); err != nil {
		t.Fatalf("creating the pod named like the run as the manager: %v", err)
	}
	var token string
	eventually(t, 2*time.Minute, "the kubelet to project the pod's token", func() error {
		if err := cl.c.Get(ctx, client.ObjectKeyFromObject(forged), forged); err != nil {
			return err
		}
		token, err = podToken(forged)
		return err
	})
	if b := boundTo(t, token); b.Pod.Name != runName || b.Pod.UID != string(forged.UID) {
		t.Fatalf("the pod's token is bound to pod %s (%s), want %s (%s)", b.Pod.Name, b.Pod.UID, runName, forged.UID)
	}
	pod := cl.tokenClient(t, token)
	fresh := &v1alpha1.QuantRun{}
	if err := pod.Get(ctx, client.ObjectKeyFromObject(run), fresh); err != nil {
		t.Fatalf("reading the run with the pod's token: %v", err)
	}
	patch := client.MergeFrom(fresh.DeepCopy())
	fresh.Status.Phase = v1alpha1.RunPhaseSucceeded
	fresh.Status.Results = builders.SyntheticResults("9999", "1", "1", "99", v1alpha1.VerdictPass)
	fresh.Status.Message = "forged"
	err = pod.Status().Patch(ctx, fresh, patch)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only the run pod the kquant manager made for QuantRun "+runName) {
		t.Errorf("a forged status write with the pod-bound token of pod %s: %v, want the pod-uid refusal", forged.UID, err)
	}
	got := &v1alpha1.QuantRun{}
	if err := cl.c.Get(ctx, client.ObjectKeyFromObject(run), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.RunPhaseRunning || got.Status.Results != nil {
		t.Errorf("the run's status after the forged write: phase %s, results %v; want it untouched", got.Status.Phase, got.Status.Results)
	}
	cl.kubectl(t, "delete", "namespace", ns, "--wait=false")
	t.Logf("tenant pod as kquant-run refused; pod %s (%s) refused the status of run %s, which records %s", forged.Name, forged.UID, runName, run.Status.RunPod.UID)
}

// forgedRunPod is a pod named like run and built as the manager builds run
// pods (runpod.Build, so that the manager's fence admits it), with the
// manager's run image, except that it restarts its container forever and
// tolerates every taint.
func (cl *cluster) forgedRunPod(t *testing.T, run *v1alpha1.QuantRun) *corev1.Pod {
	t.Helper()
	bound := run.DeepCopy()
	bound.Spec.NodeName, bound.Spec.GPUUUID = node, "GPU-forged"
	objs, err := runpod.Build(bound, runpod.GPU{UUID: bound.Spec.GPUUUID}, runpod.Config{
		Allocation: runpod.AllocationDevicePlugin, Image: cl.runImage(t), ServiceAccountName: execution.DefaultServiceAccountName,
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := objs.Pod
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	pod.Spec.Containers[0].Args = []string{"--help"}
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	pod.Spec.PriorityClassName = ""
	pod.Spec.AutomountServiceAccountToken = ptr.To(true)
	return pod
}

// runImage is the manager's --run-image, which its fence admits.
func (cl *cluster) runImage(t *testing.T) string {
	t.Helper()
	dep := &appsv1.Deployment{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: systemNamespace, Name: release + "-manager"}, dep); err != nil {
		t.Fatal(err)
	}
	for _, arg := range dep.Spec.Template.Spec.Containers[0].Args {
		if image, ok := strings.CutPrefix(arg, "--run-image="); ok {
			return image
		}
	}
	t.Fatalf("the manager's args %v name no --run-image", dep.Spec.Template.Spec.Containers[0].Args)
	return ""
}

// tokenClient reaches the cluster with token alone.
func (cl *cluster) tokenClient(t *testing.T, token string) client.Client {
	t.Helper()
	cfg := rest.AnonymousClientConfig(cl.config)
	cfg.BearerToken = token
	c, err := client.New(cfg, client.Options{Scheme: cl.c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
