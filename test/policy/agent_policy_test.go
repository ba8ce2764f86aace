// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package policy tests the admission policies kquant ships against a real API
// server: what the server itself refuses, whatever RBAC grants.
package policy

import (
	"context"
	"errors"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentprofile "github.com/kquant/kquant/agent/profile"
	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/testenv"
)

const (
	agentNamespace = "kquant-system"
	agentUser      = "system:serviceaccount:" + agentNamespace + ":kquant-agent"
	nodeNameExtra  = "authentication.kubernetes.io/node-name"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.RunPackage(m, func(e *testenv.Env) { env = e })
}

// installPolicy applies config/policy and grants the agent service account broad
// RBAC, so that every refusal in these tests comes from the policy alone.
func installPolicy(ctx context.Context, t *testing.T) {
	t.Helper()
	createPolicy(ctx, t, "agent-node-restriction.yaml")
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNamespace}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "test-agent-everything"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"kquant.dev", "coordination.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "test-agent-everything"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "test-agent-everything"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kquant-agent", Namespace: agentNamespace}},
		},
	}
	for _, obj := range objs {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
}

// agentClient acts as the kquant agent of node, as its pod-bound token would.
func agentClient(t *testing.T, node string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: agentUser,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + agentNamespace, "system:authenticated"},
	}
	if node != "" {
		cfg.Impersonate.Extra = map[string][]string{nodeNameExtra: {node}}
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func profile(node string) *kquantv1alpha1.GPUNodeProfile {
	return &kquantv1alpha1.GPUNodeProfile{ObjectMeta: metav1.ObjectMeta{Name: node}}
}

func lease(name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: agentNamespace},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40)},
	}
}

func run(ns, name, node string) *kquantv1alpha1.QuantRun {
	return &kquantv1alpha1.QuantRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{kquantv1alpha1.LabelNode: node}},
		Spec: kquantv1alpha1.QuantRunSpec{
			JobRef:   kquantv1alpha1.JobReference{Name: "job"},
			Recipe:   kquantv1alpha1.RecipeSnapshot{Name: "mxfp8", Spec: kquantv1alpha1.QuantRecipeSpec{Scheme: kquantv1alpha1.SchemeMXFP8BlockScaling}},
			Mode:     kquantv1alpha1.JobModeValidation,
			Workload: kquantv1alpha1.Workload{Shapes: []kquantv1alpha1.Shape{{Rows: 32, Cols: 32}}},
			NodeName: node,
			GPUUUID:  "GPU-" + node,
		},
	}
}

func TestAgentWritesOnlyItsOwnNode(t *testing.T) {
	ctx := context.Background()
	installPolicy(ctx, t)
	ns, err := env.CreateNamespace(ctx, "policy")
	if err != nil {
		t.Fatal(err)
	}
	agentA := agentClient(t, "node-a")

	// Policies take effect a moment after they are created: wait until the first
	// refusal shows, then check every rule.
	waitForRefusal(t, "agent node-a writing another node's profile",
		func() error { return agentA.Create(ctx, profile("probe-node")) },
		func() { _ = env.Client.Delete(ctx, profile("probe-node")) })

	// The controller (an administrator here) binds runs to both nodes.
	runA, runB := run(ns, "run-a", "node-a"), run(ns, "run-b", "node-b")
	for _, r := range []*kquantv1alpha1.QuantRun{runA, runB} {
		if err := env.Client.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	setPhase := func(c client.Client, r *kquantv1alpha1.QuantRun) error {
		patch := client.MergeFrom(r.DeepCopy())
		r.Status.Phase = kquantv1alpha1.RunPhaseRunning
		return c.Status().Patch(ctx, r, patch)
	}

	checkAdmission(t, []admissionCase{
		{"own profile", func() error { return agentA.Create(ctx, profile("node-a")) }, true, ""},
		{"another node's profile", func() error { return agentA.Create(ctx, profile("node-b")) }, false, "may write only GPUNodeProfile node-a"},
		{"own lease", func() error { return agentA.Create(ctx, lease("kquant-agent-node-a")) }, true, ""},
		{"another node's lease", func() error { return agentA.Create(ctx, lease("kquant-agent-node-b")) }, false, "may write only Lease kquant-agent-node-a"},
		{"own lease in another namespace", func() error {
			l := lease("kquant-agent-node-a")
			l.Namespace = ns
			return agentA.Create(ctx, l)
		}, false, "may write only Lease kquant-agent-node-a in its own namespace"},
		// The agent's LeaseKeeper renews by Update of the Lease it holds.
		{"renewing its own lease", func() error {
			keeper := agentprofile.NewLeaseKeeper(agentA, clock.RealClock{}, agentNamespace, "node-a", "agent-a", 0, 0)
			return errors.Join(keeper.Renew(ctx), keeper.Renew(ctx))
		}, true, ""},
		{"updating another node's lease", func() error {
			l := lease("kquant-agent-node-b")
			if err := env.Client.Create(ctx, l); err != nil {
				return err
			}
			l.Spec.HolderIdentity = ptr.To("agent-a")
			return agentA.Update(ctx, l)
		}, false, "may write only Lease kquant-agent-node-a"},
		{"status of a run bound to its node", func() error { return setPhase(agentA, runA.DeepCopy()) }, true, ""},
		{"status of a run bound to another node", func() error { return setPhase(agentA, runB.DeepCopy()) }, false, "may write only QuantRuns bound to that node"},
		{"a run bound to another node", func() error { return agentA.Create(ctx, run(ns, "run-c", "node-b")) }, false, "may write only QuantRuns bound to that node"},
		{"a token bound to no node", func() error { return agentClient(t, "").Create(ctx, profile("node-z")) }, false, "must be bound to a node"},
		{"the controller is not restricted", func() error { return env.Client.Create(ctx, profile("node-b")) }, true, ""},
	})
}
