// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/testenv"
)

const (
	podNameExtra = "authentication.kubernetes.io/pod-name"
	podUIDExtra  = "authentication.kubernetes.io/pod-uid"
	// notRecorded is the refusal a run pod waits out (agent/runmode).
	notRecorded = "is not recorded yet (status.runPod)"
)

// installRunPolicy applies config/policy/run-pod-restriction.yaml and grants
// every kquant-run service account broad RBAC on kquant's kinds, so that
// every refusal below comes from the policy alone.
func installRunPolicy(ctx context.Context, t *testing.T) {
	t.Helper()
	createPolicy(ctx, t, "run-pod-restriction.yaml")
	objs := []client.Object{
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "test-run-everything"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"kquant.dev"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "test-run-everything"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "test-run-everything"},
			Subjects:   []rbacv1.Subject{{Kind: "Group", Name: "system:serviceaccounts"}},
		},
	}
	for _, obj := range objs {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
}

// runPodClient acts as the run pod named pod with UID uid in namespace ns,
// as its pod-bound token of service account kquant-run would; an empty pod
// is a token bound to no pod, an empty uid one without the pod-uid claim.
func runPodClient(t *testing.T, ns, pod string, uid types.UID) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":kquant-run",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		Extra:    map[string][]string{},
	}
	if pod != "" {
		cfg.Impersonate.Extra[podNameExtra] = []string{pod}
	}
	if uid != "" {
		cfg.Impersonate.Extra[podUIDExtra] = []string{string(uid)}
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// recordedRun creates a run bound to node-a whose status, as the manager and
// earlier writes left it, is status.
func recordedRun(ctx context.Context, t *testing.T, ns, name string, status kquantv1alpha1.QuantRunStatus) *kquantv1alpha1.QuantRun {
	t.Helper()
	r := run(ns, name, "node-a")
	r.Status = status
	if err := testenv.CreateWithStatus(ctx, env.Client, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRunPodWritesOnlyItsOwnRunStatus: a run pod's token lets it write the
// status of the QuantRun it is named after, in its own namespace, only when
// the run records that very pod (status.runPod.uid is the token's pod-uid),
// only while the run has not finished, and only the run pod's fields;
// nothing else of kquant's, whatever RBAC grants.
func TestRunPodWritesOnlyItsOwnRunStatus(t *testing.T) {
	ctx := context.Background()
	installRunPolicy(ctx, t)
	ns, err := env.CreateNamespace(ctx, "runpolicy")
	if err != nil {
		t.Fatal(err)
	}
	other, err := env.CreateNamespace(ctx, "runpolicy-other")
	if err != nil {
		t.Fatal(err)
	}
	recorded := func(name string, uid types.UID) kquantv1alpha1.QuantRunStatus {
		return kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhasePending,
			RunPod: &kquantv1alpha1.RunPodReference{Name: name, UID: uid}}
	}
	bound := metav1.NewTime(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	ownStatus := recorded("job-0-0", "uid-own")
	ownStatus.BindTime = &bound
	own := recordedRun(ctx, t, ns, "job-0-0", ownStatus)
	sibling := recordedRun(ctx, t, ns, "job-1-0", recorded("job-1-0", "uid-sibling"))
	elsewhere := recordedRun(ctx, t, other, "job-0-0", recorded("job-0-0", "uid-own"))
	unrecorded := recordedRun(ctx, t, ns, "job-2-0", kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhasePending})
	finished := recordedRun(ctx, t, ns, "job-3-0", kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhaseFailed,
		RunPod: &kquantv1alpha1.RunPodReference{Name: "job-3-0", UID: "uid-finished"}})

	pod := runPodClient(t, ns, "job-0-0", "uid-own")
	// write changes the stored status of r with edit, as client c.
	write := func(c client.Client, r *kquantv1alpha1.QuantRun, edit func(*kquantv1alpha1.QuantRunStatus)) error {
		fresh := &kquantv1alpha1.QuantRun{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(r), fresh); err != nil {
			return err
		}
		patch := client.MergeFrom(fresh.DeepCopy())
		edit(&fresh.Status)
		return c.Status().Patch(ctx, fresh, patch)
	}
	running := func(s *kquantv1alpha1.QuantRunStatus) { s.Phase = kquantv1alpha1.RunPhaseRunning }
	setPhase := func(c client.Client, r *kquantv1alpha1.QuantRun) error { return write(c, r, running) }

	waitForRefusal(t, "a run pod writing another run's status", func() error { return setPhase(pod, sibling) }, nil)

	checkAdmission(t, []admissionCase{
		{"its own run's status", func() error { return setPhase(pod, own) }, true, ""},
		{"its own run's status, server-side apply", func() error {
			obj := &kquantv1alpha1.QuantRun{TypeMeta: metav1.TypeMeta{APIVersion: kquantv1alpha1.GroupVersion.String(), Kind: "QuantRun"},
				ObjectMeta: metav1.ObjectMeta{Name: own.Name, Namespace: ns},
				Status: kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhaseRunning, AgentID: "job-0-0/uid-own",
					BindTime: &bound, Message: "running on GPU GPU-node-a"}}
			return pod.Status().Patch(ctx, obj, client.Apply, client.FieldOwner("kquant-run"), client.ForceOwnership) //nolint:staticcheck // the run pod's way
		}, true, ""},
		{"another run's status in its namespace", func() error { return setPhase(pod, sibling) }, false, "may write only the status of QuantRun job-0-0"},
		{"a run of the same name in another namespace", func() error { return setPhase(pod, elsewhere) }, false, "may write only the status of QuantRun job-0-0"},
		{"its own run's spec", func() error {
			fresh := &kquantv1alpha1.QuantRun{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(own), fresh); err != nil {
				return err
			}
			fresh.Labels["tampered"] = "true"
			return pod.Update(ctx, fresh)
		}, false, "may write only the status of its own QuantRun"},
		{"deleting its own run", func() error { return pod.Delete(ctx, own.DeepCopy()) }, false, "may write only the status of its own QuantRun"},
		{"creating a run", func() error { return pod.Create(ctx, run(ns, "job-0-0x", "node-a")) }, false, "may write only the status of its own QuantRun"},
		{"a token bound to no pod", func() error { return setPhase(runPodClient(t, ns, "", ""), own) }, false, "must be bound to a pod"},
		{"a token without the pod-uid claim", func() error { return setPhase(runPodClient(t, ns, "job-0-0", ""), own) }, false, "must be bound to a pod"},
		// A pod named like the run that is not the pod the manager made: a
		// forged pod, or the run's earlier pod.
		{"a pod named like its run, of another UID", func() error { return setPhase(runPodClient(t, ns, "job-0-0", "uid-forged"), own) },
			false, "only the run pod the kquant manager made for QuantRun job-0-0 (status.runPod.uid uid-own) may write its status"},
		{"its run before the manager recorded the pod", func() error { return setPhase(runPodClient(t, ns, "job-2-0", "uid-early"), unrecorded) },
			false, notRecorded},
		{"its run once finished", func() error {
			return write(runPodClient(t, ns, "job-3-0", "uid-finished"), finished, func(s *kquantv1alpha1.QuantRunStatus) {
				s.Message = "rewritten"
			})
		}, false, "QuantRun job-3-0 already finished (Failed)"},
		{"the bind time, which the manager owns", func() error {
			return write(pod, own, func(s *kquantv1alpha1.QuantRunStatus) { s.BindTime = &metav1.Time{Time: bound.Add(time.Hour)} })
		}, false, "cannot change status.runPod, status.bindTime or status.conditions"},
		{"the agent's conditions", func() error {
			return write(pod, own, func(s *kquantv1alpha1.QuantRunStatus) {
				s.Conditions = []metav1.Condition{{Type: kquantv1alpha1.RunConditionRestarted, Status: metav1.ConditionTrue,
					Reason: "Forged", LastTransitionTime: metav1.Now()}}
			})
		}, false, "cannot change status.runPod, status.bindTime or status.conditions"},
		{"the recorded run pod", func() error {
			return write(pod, own, func(s *kquantv1alpha1.QuantRunStatus) {
				s.RunPod = &kquantv1alpha1.RunPodReference{Name: "job-0-0", UID: "uid-other"}
			})
		}, false, "status.runPod"},
		{"phase Pending, which only the manager sets", func() error {
			return write(pod, own, func(s *kquantv1alpha1.QuantRunStatus) { s.Phase = kquantv1alpha1.RunPhasePending })
		}, false, "may set status.phase only to Running, Succeeded or Failed"},
		{"another pod's agentID", func() error {
			return write(pod, own, func(s *kquantv1alpha1.QuantRunStatus) { s.AgentID = "job-1-0/uid-sibling" })
		}, false, "may set status.agentID only to its own pod, job-0-0/uid-own"},
		{"other service accounts are not restricted by it", func() error {
			cfg := rest.CopyConfig(env.Config)
			cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":someone-else",
				Groups: []string{"system:serviceaccounts", "system:authenticated"}}
			c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
			if err != nil {
				return err
			}
			return setPhase(c, sibling)
		}, true, ""},
	})
}

// runServiceAccount is the run pods' ServiceAccount (execution.DefaultServiceAccountName).
const runServiceAccount = "kquant-run"

// TestOnlyTheManagerCreatesRunPods: a tenant, whatever RBAC grants it, cannot
// create a pod that runs as kquant-run, and the refusal says why; the
// manager can, and tenants' other pods are not touched.
func TestOnlyTheManagerCreatesRunPods(t *testing.T) {
	ctx := context.Background()
	createPolicy(ctx, t, "run-pod-creation.yaml")
	ns, err := env.CreateNamespace(ctx, "runcreation")
	if err != nil {
		t.Fatal(err)
	}
	installManagerRBAC(ctx, t)
	tenant := tenantClient(ctx, t, ns)
	manager := managerClient(t)
	pod := func(name, serviceAccount string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{ServiceAccountName: serviceAccount,
				Containers: []corev1.Container{{Name: "c", Image: "registry.example/forger:1"}}},
		}
	}
	const why = "only the kquant manager may create pods that run as the kquant-run ServiceAccount"
	waitForRefusal(t, "a tenant's pod running as kquant-run",
		func() error { return tenant.Create(ctx, pod("probe", runServiceAccount)) },
		func() { _ = env.Client.Delete(ctx, pod("probe", runServiceAccount)) })

	checkAdmission(t, []admissionCase{
		{"a tenant's pod running as kquant-run, named like the next run", func() error {
			return tenant.Create(ctx, pod("job-0-1", runServiceAccount))
		}, false, why},
		{"a tenant's pod naming kquant-run in the deprecated serviceAccount", func() error {
			p := pod("job-0-2", "")
			p.Spec.DeprecatedServiceAccount = runServiceAccount
			return tenant.Create(ctx, p)
		}, false, why},
		{"the refusal points to the docs", func() error { return tenant.Create(ctx, pod("job-0-3", runServiceAccount)) }, false, "docs/security.md"},
		{"a tenant's pod of another ServiceAccount", func() error { return tenant.Create(ctx, pod("own-work", "default")) }, true, ""},
		{"the manager's run pod", func() error { return manager.Create(ctx, runPodOf(ctx, t, ns, "job-0-0")) }, true, ""},
	})
}
