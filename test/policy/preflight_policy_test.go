// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/testenv"
)

// TestPreflightWritesOnlyPreflightRuns: a workload's service account that
// RBAC lets write every QuantRun (as the kquant-preflight role lets it create
// runs and patch their status) may write only runs labelled
// kquant.dev/preflight=true: it cannot create another run, write a
// manager-owned run's status, or move the label either way; a cluster admin
// and kquant's own identities are not matched.
func TestPreflightWritesOnlyPreflightRuns(t *testing.T) {
	ctx := context.Background()
	createPolicy(ctx, t, "preflight-run-restriction.yaml")
	ns, err := env.CreateNamespace(ctx, "preflight")
	if err != nil {
		t.Fatal(err)
	}
	const sa = "trainer"
	for _, obj := range []client.Object{
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "test-preflight-every-run"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"kquant.dev"}, Resources: []string{"quantruns", "quantruns/status"}, Verbs: []string{"*"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "test-preflight-every-run", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "test-preflight-every-run"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}},
		},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + sa,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	workload, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// The policy matches every identity but kquant's: the other tests'
	// service accounts must not meet it.
	t.Cleanup(func() {
		for _, obj := range []client.Object{
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "kquant-preflight-run-restriction"}},
			&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "kquant-preflight-run-restriction"}},
		} {
			if err := env.Client.Delete(ctx, obj); err != nil {
				t.Errorf("deleting %T: %v", obj, err)
			}
		}
		waitForAllow(t, "the workload's writes once the policy is gone", func() error {
			return workload.Create(ctx, run(ns, "after-0-0", "node-a"))
		})
	})
	preflight := func(name string) *kquantv1alpha1.QuantRun {
		r := run(ns, name, "node-a")
		r.Labels = map[string]string{kquantv1alpha1.LabelPreflight: "true"}
		return r
	}
	managers := run(ns, "job-0-0", "node-a")
	if err := testenv.CreateWithStatus(ctx, env.Client, managers); err != nil {
		t.Fatal(err)
	}
	own := preflight("trainer-0-preflight-a")
	if err := env.Client.Create(ctx, own); err != nil {
		t.Fatal(err)
	}
	finish := func(c client.Client, r *kquantv1alpha1.QuantRun) error {
		fresh := &kquantv1alpha1.QuantRun{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(r), fresh); err != nil {
			return err
		}
		patch := client.MergeFrom(fresh.DeepCopy())
		fresh.Status.Phase, fresh.Status.Message = kquantv1alpha1.RunPhaseFailed, "forged"
		return c.Status().Patch(ctx, fresh, patch)
	}
	relabel := func(c client.Client, r *kquantv1alpha1.QuantRun, value string) error {
		fresh := &kquantv1alpha1.QuantRun{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(r), fresh); err != nil {
			return err
		}
		patch := client.MergeFrom(fresh.DeepCopy())
		if value == "" {
			delete(fresh.Labels, kquantv1alpha1.LabelPreflight)
		} else {
			fresh.Labels = map[string]string{kquantv1alpha1.LabelPreflight: value}
		}
		return c.Patch(ctx, fresh, patch)
	}
	waitForRefusal(t, "a workload creating a run that is not a preflight record",
		func() error { return workload.Create(ctx, run(ns, "forged-0-0", "node-a")) },
		func() { _ = env.Client.Delete(ctx, run(ns, "forged-0-0", "node-a")) })

	checkAdmission(t, []admissionCase{
		{name: "create a preflight record", do: func() error { return workload.Create(ctx, preflight("trainer-0-preflight-b")) }, wantAllow: true},
		{name: "write a preflight record's status", do: func() error { return finish(workload, own) }, wantAllow: true},
		{name: "create a run without the label", do: func() error { return workload.Create(ctx, run(ns, "job-1-0", "node-a")) },
			wantMsg: "may write only preflight records, which carry the label kquant.dev/preflight=true"},
		{name: "create a run labelled preflight=false", do: func() error {
			r := preflight("job-2-0")
			r.Labels[kquantv1alpha1.LabelPreflight] = "false"
			return workload.Create(ctx, r)
		}, wantMsg: "may write only preflight records"},
		{name: "write a manager's run's status", do: func() error { return finish(workload, managers) }, wantMsg: "may write only preflight records"},
		{name: "make a manager's run a preflight record", do: func() error { return relabel(workload, managers, "true") },
			wantMsg: "QuantRun job-0-0 is not a preflight record"},
		{name: "take the label off a preflight record", do: func() error { return relabel(workload, own, "") },
			wantMsg: "may write only preflight records"},
		{name: "a cluster admin writes a manager's run", do: func() error { return finish(env.Client, managers) }, wantAllow: true},
	})
}
