// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kquant/kquant/controllers/execution"
	"github.com/kquant/kquant/domain/gate"
	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/test/testenv"
)

const (
	managerUser = "system:serviceaccount:kquant-system:kquant-manager"
	// runImage is config/policy/manager-fence.yaml's runImage: the manager's
	// --run-image in config/manager (config/default's agent image).
	runImage = "ghcr.io/kquant/kquant-agent:v0.1.0"
)

// installManagerRBAC binds the manager's ServiceAccount to its generated
// ClusterRole (config/rbac/manager_role.yaml), so that what it is allowed
// here it is allowed in a cluster (the finalizers that
// OwnerReferencesPermissionEnforcement asks for included), plus bind on
// ClusterRoles, so that RBAC's own escalation check does not refuse a
// RoleBinding before the fence can.
func installManagerRBAC(ctx context.Context, t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "rbac", "manager_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	generated := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(data, generated); err != nil || generated.Kind != "ClusterRole" {
		t.Fatalf("decoding the manager's generated ClusterRole (kind %q): %v", generated.Kind, err)
	}
	generated.ObjectMeta = metav1.ObjectMeta{Name: "test-kquant-manager"}
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kquant-manager", Namespace: "kquant-system"}}
	objs := []client.Object{
		generated,
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "test-kquant-manager"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: generated.Name},
			Subjects:   subjects,
		},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "test-kquant-manager-extra"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "test-kquant-manager-extra"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "test-kquant-manager-extra"},
			Subjects:   subjects,
		},
		runpod.PriorityClass(runpod.DefaultPriorityClassName),
	}
	for _, obj := range objs {
		if err := env.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
}

// managerClient acts as the manager's ServiceAccount.
func managerClient(t *testing.T) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: managerUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kquant-system", "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tenantClient acts as a user with the built-in edit role in ns only: bound
// to system:aggregate-to-edit, which holds edit's rules, since the test API
// server runs no controller to aggregate them into edit.
func tenantClient(ctx context.Context, t *testing.T, ns string) client.Client {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-edit", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:aggregate-to-edit"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: rbacv1.GroupName, Name: "tenant-" + ns}},
	}
	if err := env.Client.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "tenant-" + ns, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runPodOf creates a bound run named name in ns and returns its run pod as
// the manager builds it (runpod.Build with the fence's run image), not yet
// created.
func runPodOf(ctx context.Context, t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	r := run(ns, name, "node-a")
	if err := env.Client.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	objs, err := runpod.Build(r, runpod.GPU{UUID: r.Spec.GPUUUID}, runpod.Config{
		Allocation: runpod.AllocationDevicePlugin, Image: runImage, ServiceAccountName: execution.DefaultServiceAccountName,
	})
	if err != nil {
		t.Fatal(err)
	}
	return objs.Pod
}

// TestManagerIsFenced: whatever its RBAC grants, the manager's ServiceAccount
// may create only run pods as runpod.Build makes them, only the run
// ServiceAccount and its RoleBinding, and change only kquant's keys on Nodes.
func TestManagerIsFenced(t *testing.T) {
	ctx := context.Background()
	createPolicy(ctx, t, "manager-fence.yaml")
	installManagerRBAC(ctx, t)
	ns, err := env.CreateNamespace(ctx, "fence")
	if err != nil {
		t.Fatal(err)
	}
	manager := managerClient(t)
	seq := 0
	// pod is a new run's run pod changed by edit.
	pod := func(edit func(*corev1.Pod)) *corev1.Pod {
		seq++
		p := runPodOf(ctx, t, ns, fmt.Sprintf("job-%d-0", seq))
		edit(p)
		return p
	}
	createPod := func(edit func(*corev1.Pod)) func() error {
		return func() error { return manager.Create(ctx, pod(edit)) }
	}
	ctr := func(p *corev1.Pod) *corev1.Container { return &p.Spec.Containers[0] }
	waitForRefusal(t, "the manager creating a pod with a hostPath volume", createPod(func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
	}), nil)

	// Objects as others made them: a tenant's pod, and a node with a
	// platform team's taint and a condition of the kubelet's.
	stranger := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tenant-pod", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fence-" + ns, Labels: map[string]string{"kubernetes.io/hostname": "fence-" + ns}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}}}
	for _, obj := range []client.Object{stranger, node} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	node.Status = corev1.NodeStatus{
		Capacity:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
	}
	if err := env.Client.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	// patchNode changes the stored node with edit, as the manager; status
	// patches go to nodes/status.
	patchNode := func(status bool, edit func(*corev1.Node)) func() error {
		return func() error {
			fresh := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), fresh); err != nil {
				return err
			}
			patch := client.MergeFrom(fresh.DeepCopy())
			edit(fresh)
			if status {
				return manager.Status().Patch(ctx, fresh, patch)
			}
			return manager.Patch(ctx, fresh, patch)
		}
	}
	rb := func(name, role, subject string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: subject, Namespace: ns}},
		}
	}
	const (
		notRunPod = "may create and delete only run pods"
		noHost    = "may not create pods with hostPID, hostNetwork, hostIPC or hostPath volumes"
	)

	checkAdmission(t, []admissionCase{
		// Pods.
		{"a run pod as runpod.Build makes it", createPod(func(*corev1.Pod) {}), true, ""},
		{"a pod with a hostPath volume", createPod(func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}), false, noHost},
		{"a pod in the host's PID namespace", createPod(func(p *corev1.Pod) { p.Spec.HostPID = true }), false, noHost},
		{"a pod on the host's network", createPod(func(p *corev1.Pod) { p.Spec.HostNetwork = true }), false, noHost},
		{"a privileged pod", createPod(func(p *corev1.Pod) { ctr(p).SecurityContext.Privileged = ptr.To(true) }), false, "privileged"},
		{"a pod that adds a capability", createPod(func(p *corev1.Pod) {
			ctr(p).SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
		}), false, "add capabilities"},
		{"a pod of another image", createPod(func(p *corev1.Pod) { ctr(p).Image = "registry.example/miner:1" }), false, "only pods of the run image " + runImage},
		{"a pod with an init container of another image", createPod(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/miner:1"}}
		}), false, "only pods of the run image"},
		{"a pod of another ServiceAccount", createPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "default" }), false, "only pods that run as kquant-run"},
		{"a pod no QuantRun controls", createPod(func(p *corev1.Pod) { p.OwnerReferences = nil }), false, notRunPod},
		{"a pod without kquant's run labels", createPod(func(p *corev1.Pod) { delete(p.Labels, runpod.LabelRun) }), false, notRunPod},
		{"deleting a tenant's pod", func() error { return manager.Delete(ctx, stranger.DeepCopy()) }, false, notRunPod},
		// The run pods' PriorityClass.
		// installManagerRBAC made it: AlreadyExists comes only once admission let it through.
		{"the run pods' PriorityClass", func() error {
			return client.IgnoreAlreadyExists(manager.Create(ctx, runpod.PriorityClass(runpod.DefaultPriorityClassName)))
		}, true, ""},
		{"a PriorityClass above ordinary pods", func() error {
			pc := runpod.PriorityClass("kquant-urgent-" + ns)
			pc.Value = 1000000
			return manager.Create(ctx, pc)
		}, false, "may create only a PriorityClass below 0"},
		// The run ServiceAccount and its RoleBinding.
		{"the run ServiceAccount", func() error {
			return manager.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: runServiceAccount, Namespace: ns}})
		}, true, ""},
		{"another ServiceAccount", func() error {
			return manager.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kquant-admin", Namespace: ns}})
		}, false, "may write only the ServiceAccount and RoleBinding named kquant-run"},
		{"the run RoleBinding", func() error { return manager.Create(ctx, rb(runServiceAccount, "kquant-run", runServiceAccount)) }, true, ""},
		{"a RoleBinding to cluster-admin", func() error {
			return manager.Create(ctx, rb(runServiceAccount+"-x", "cluster-admin", runServiceAccount))
		}, false, "may write only the ServiceAccount and RoleBinding named kquant-run"},
		{"the run RoleBinding to cluster-admin", func() error {
			if err := env.Client.Delete(ctx, rb(runServiceAccount, "", "")); client.IgnoreNotFound(err) != nil {
				return err
			}
			return manager.Create(ctx, rb(runServiceAccount, "cluster-admin", runServiceAccount))
		}, false, "may bind only ServiceAccount kquant-run of its own namespace to ClusterRole kquant-run"},
		{"the run RoleBinding for another ServiceAccount", func() error {
			return manager.Create(ctx, rb(runServiceAccount, "kquant-run", "default"))
		}, false, "may bind only ServiceAccount kquant-run"},
		// Nodes.
		{"a kquant.dev/ label", patchNode(false, func(n *corev1.Node) { n.Labels["kquant.dev/mxfp8"] = "native" }), true, ""},
		{"a gate's taint and its owners annotation", patchNode(false, func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "gate.kquant.dev/mxfp8", Value: "failed", Effect: corev1.TaintEffectNoSchedule})
			n.Annotations = map[string]string{"kquant.dev/gate-owners": `{"gate.kquant.dev/mxfp8":"policy-a"}`}
		}), true, ""},
		{"a label outside kquant's keys", patchNode(false, func(n *corev1.Node) { n.Labels["node-role.kubernetes.io/gpu"] = "" }),
			false, "may change only kquant.dev/ and gate.kquant.dev/ keys on Node fence-" + ns + ", not label node-role.kubernetes.io/gpu"},
		{"removing the platform team's taint", patchNode(false, func(n *corev1.Node) {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == "dedicated" })
		}), false, "not taint dedicated"},
		{"a cordon", patchNode(false, func(n *corev1.Node) { n.Spec.Unschedulable = true }), false, "may not cordon Node"},
		{"a gate's node condition", patchNode(true, func(n *corev1.Node) {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: gate.ConditionType("mxfp8"), Status: corev1.ConditionFalse,
				Reason: "SNRBelowTolerance", Message: "recipe mxfp8: GPU GPU-0 failed validation in run r (policy p)"})
		}), true, ""},
		{"the kubelet's Ready condition", patchNode(true, func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }),
			false, "not condition Ready"},
		{"the node's capacity", patchNode(true, func(n *corev1.Node) { n.Status.Capacity["nvidia.com/gpu"] = resource.MustParse("16") }),
			false, "capacity"},
		// Others are not fenced by it.
		{"an administrator's label", func() error {
			fresh := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(node), fresh); err != nil {
				return err
			}
			fresh.Labels["node-role.kubernetes.io/gpu"] = ""
			return env.Client.Update(ctx, fresh)
		}, true, ""},
	})
}
