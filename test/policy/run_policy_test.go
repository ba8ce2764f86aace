package policy

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

const podNameExtra = "authentication.kubernetes.io/pod-name"

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

// runPodClient acts as run pod pod of namespace ns, as its pod-bound token
// of service account kquant-run would.
func runPodClient(t *testing.T, ns, pod string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":kquant-run",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	if pod != "" {
		cfg.Impersonate.Extra = map[string][]string{podNameExtra: {pod}}
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRunPodWritesOnlyItsOwnRunStatus: a run pod's token lets it write the
// status of the QuantRun it is named after, in its own namespace, and nothing
// else of kquant's, whatever RBAC grants.
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
	own, sibling, elsewhere := run(ns, "job-0-0", "node-a"), run(ns, "job-1-0", "node-a"), run(other, "job-0-0", "node-a")
	for _, r := range []*kquantv1alpha1.QuantRun{own, sibling, elsewhere} {
		if err := env.Client.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	pod := runPodClient(t, ns, "job-0-0")
	setPhase := func(c client.Client, r *kquantv1alpha1.QuantRun) error {
		fresh := &kquantv1alpha1.QuantRun{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(r), fresh); err != nil {
			return err
		}
		patch := client.MergeFrom(fresh.DeepCopy())
		fresh.Status.Phase = kquantv1alpha1.RunPhaseRunning
		return c.Status().Patch(ctx, fresh, patch)
	}

	waitForRefusal(t, "a run pod writing another run's status", func() error { return setPhase(pod, sibling) }, nil)

	checkAdmission(t, []admissionCase{
		{"its own run's status", func() error { return setPhase(pod, own) }, true, ""},
		{"its own run's status, server-side apply", func() error {
			obj := &kquantv1alpha1.QuantRun{TypeMeta: metav1.TypeMeta{APIVersion: kquantv1alpha1.GroupVersion.String(), Kind: "QuantRun"},
				ObjectMeta: metav1.ObjectMeta{Name: own.Name, Namespace: ns},
				Status:     kquantv1alpha1.QuantRunStatus{Phase: kquantv1alpha1.RunPhaseRunning, AgentID: "run-pod"}}
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
		{"a token bound to no pod", func() error { return setPhase(runPodClient(t, ns, ""), own) }, false, "must be bound to a pod"},
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
