// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package tenant

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/execution"
	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
	"github.com/kquant/kquant/test/wait"
)

// The cluster the tenant finds: its own namespace, another tenant's, the
// release namespace that config/ installs kquant into, and the kubelets'
// Lease namespace.
const (
	tenantNS    = "tenant-a"
	otherNS     = "tenant-b"
	releaseNS   = "kquant-system"
	nodeLeaseNS = "kube-node-lease"

	// tenantUser is the namespace editor of tenantNS.
	tenantUser = "alice"
	// managerSA and agentSA are the manager's and the agents' ServiceAccounts
	// in config/rbac.
	managerSA = "kquant-manager"
	agentSA   = "kquant-agent"
	// runSA is the run pods' ServiceAccount in every namespace with runs.
	runSA = execution.DefaultServiceAccountName

	// The fixtures: two GPU nodes, the second gated by the platform team; a
	// recipe, a job and a running run (with its run pod in tenantNS) in each
	// tenant namespace; a catalog recipe; the tenant's own ServiceAccount.
	gpuNode    = "gpu-node-a"
	gatedNode  = "gpu-node-b"
	gateKey    = kquantv1alpha1.GateLabelPrefix + "fp8"
	recipeName = "fp8"
	jobName    = "nightly"
	runName    = "nightly-0-0"
	catalogFP8 = "fp8-current-scaling"
	appSA      = "app"

	// settle bounds every wait for the API server's informers (RBAC,
	// admission policies) to see what the suite just created.
	settle = 60 * time.Second
)

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.RunPackage(m, func(e *testenv.Env) { env = e })
}

// installKquant creates the namespaces and applies every manifest of
// config/rbac and config/policy, as `kubectl apply -k config/default` would,
// then aggregates the ClusterRoles and waits until the admission policies
// are in force.
func installKquant(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, ns := range []string{tenantNS, otherNS, releaseNS, nodeLeaseNS} {
		err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
	for _, dir := range []string{"rbac", "policy"} {
		objs, err := readManifests(filepath.Join(testenv.RepoRoot(), "config", dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs {
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatalf("creating %s %s from config/%s: %v", obj.GetKind(), obj.GetName(), dir, err)
			}
		}
	}
	if err := aggregateClusterRoles(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	waitForAdmissionPolicies(ctx, t)
}

// readManifests decodes every object of the YAML files in dir, leaving out
// kustomization.yaml, which is kustomize's and no object.
func readManifests(dir string) ([]*unstructured.Unstructured, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, p := range paths {
		if filepath.Base(p) == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("decoding %s: %w", p, err)
			}
			if len(m) > 0 {
				objs = append(objs, &unstructured.Unstructured{Object: m})
			}
		}
	}
	return objs, nil
}

// aggregateClusterRoles does what kube-controller-manager's
// clusterrole-aggregation controller does and envtest does not run: every
// ClusterRole with an aggregationRule gets the rules of each ClusterRole its
// selectors match. Aggregated roles are matched in turn (view into edit, edit
// into admin), so it repeats until a pass changes nothing.
func aggregateClusterRoles(ctx context.Context, c client.Client) error {
	for {
		var roles rbacv1.ClusterRoleList
		if err := c.List(ctx, &roles); err != nil {
			return fmt.Errorf("listing ClusterRoles to aggregate: %w", err)
		}
		changed := false
		for i := range roles.Items {
			role := &roles.Items[i]
			if role.AggregationRule == nil {
				continue
			}
			var rules []rbacv1.PolicyRule
			for _, sel := range role.AggregationRule.ClusterRoleSelectors {
				selector, err := metav1.LabelSelectorAsSelector(&sel)
				if err != nil {
					return fmt.Errorf("aggregation selector of ClusterRole %s: %w", role.Name, err)
				}
				for _, other := range roles.Items {
					if other.Name == role.Name || !selector.Matches(labels.Set(other.Labels)) {
						continue
					}
					for _, rule := range other.Rules {
						if !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(r, rule) }) {
							rules = append(rules, rule)
						}
					}
				}
			}
			if equality.Semantic.DeepEqual(rules, role.Rules) {
				continue
			}
			role.Rules = rules
			if err := c.Update(ctx, role); err != nil {
				return fmt.Errorf("aggregating ClusterRole %s: %w", role.Name, err)
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
}

// waitForAdmissionPolicies waits until the policies from config/policy are in
// force. The API server loads ValidatingAdmissionPolicies and their bindings
// from informers, in the order they were created, so once a canary policy
// created after all of them refuses its request, every earlier one is loaded.
func waitForAdmissionPolicies(ctx context.Context, t *testing.T) {
	t.Helper()
	const canary = "tenant-suite-canary"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: canary},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "is-canary", Expression: "object.metadata.name == '" + canary + "'"}},
			Validations:     []admissionregistrationv1.Validation{{Expression: "false", Message: canary}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: canary},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        canary,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating the canary admission policy: %v", err)
		}
	}
	wait.For(t, settle, "the canary admission policy in force", func() error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: canary, Namespace: tenantNS}}
		err := env.Client.Create(ctx, cm, client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), canary) {
			return fmt.Errorf("canary ConfigMap not refused yet: %v", err)
		}
		return nil
	})
}

// installFixtures creates, as the cluster admin and as the manager, what the
// tenant finds on a working cluster: nodes, one gated; a catalog recipe and a
// node profile; in each tenant namespace a recipe, a job, a running run and
// the run ServiceAccount the manager binds; the run pods' PriorityClass; in
// tenantNS the run's pod, created by the manager from the run-pod template,
// and the tenant's own ServiceAccount.
func installFixtures(ctx context.Context, t *testing.T) {
	t.Helper()
	gated := builders.MakeNode(gatedNode).Label(gateKey, kquantv1alpha1.GateValueFailed).Obj()
	gated.Spec.Taints = []corev1.Taint{{Key: gateKey, Value: kquantv1alpha1.GateValueFailed, Effect: corev1.TaintEffectNoSchedule}}
	objs := []client.Object{
		builders.MakeNode(gpuNode).Label("kquant.dev/fp8", "native").Obj(),
		gated,
		builders.MakeQuantRecipe(catalogFP8, "").Scheme(kquantv1alpha1.SchemeFloat8CurrentScaling).ClusterObj(),
		builders.MakeGPUNodeProfile(gpuNode).GPUs(builders.H100, 1).Ready().Obj(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: appSA, Namespace: tenantNS}},
		runpod.PriorityClass(runpod.DefaultPriorityClassName),
	}
	for _, ns := range []string{tenantNS, otherNS} {
		objs = append(objs,
			builders.MakeQuantRecipe(recipeName, ns).Scheme(kquantv1alpha1.SchemeFloat8CurrentScaling).Obj(),
			builders.MakeQuantJob(jobName, ns).Recipe(recipeName).Obj(),
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: runSA, Namespace: ns}},
			&rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: runSA, Namespace: ns},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: execution.DefaultRunClusterRole},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: runSA, Namespace: ns}},
			},
		)
	}
	for _, obj := range objs {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating fixture %T %s: %v", obj, obj.GetName(), err)
		}
	}
	for _, ns := range []string{tenantNS, otherNS} {
		run := builders.MakeQuantRun(runName, ns, jobName).Bound(gpuNode, 0).Obj()
		status := run.Status
		if err := env.Client.Create(ctx, run); err != nil {
			t.Fatalf("creating run %s/%s: %v", ns, runName, err)
		}
		run.Status = status
		run.Status.Phase = kquantv1alpha1.RunPhaseRunning
		if err := env.Client.Status().Update(ctx, run); err != nil {
			t.Fatalf("marking run %s/%s Running: %v", ns, runName, err)
		}
	}
	createRunPod(ctx, t)
}

// createRunPod creates the run pod of tenantNS's run as the manager does:
// from the run-pod template, as the manager's ServiceAccount, and records the
// pod in the run's status.runPod.
func createRunPod(ctx context.Context, t *testing.T) {
	t.Helper()
	manager := asManager(t)
	run := &kquantv1alpha1.QuantRun{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: runName}, run); err != nil {
		t.Fatal(err)
	}
	objs, err := runpod.Build(run, runpod.GPU{UUID: run.Spec.GPUUUID}, runpod.Config{
		Allocation:         runpod.AllocationDevicePlugin,
		Image:              managerFlag(t, "--run-image="),
		ServiceAccountName: runSA,
	})
	if err != nil {
		t.Fatal(err)
	}
	wait.For(t, settle, "the manager's RBAC in force", func() error {
		return manager.Create(ctx, objs.Pod.DeepCopy(), client.DryRunAll)
	})
	if err := manager.Create(ctx, objs.Pod); err != nil {
		t.Fatalf("creating the run pod as the manager: %v", err)
	}
	// status.runPod ties the run to this pod's UID; a server without the
	// field prunes it.
	patch := fmt.Sprintf(`{"status":{"runPod":{"name":%q,"uid":%q}}}`, objs.Pod.Name, objs.Pod.UID)
	if err := manager.Status().Patch(ctx, run, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("recording the run pod in status.runPod as the manager: %v", err)
	}
}

// managerFlag is the value of the manager's command-line flag prefix in
// config/manager/manager.yaml: the run-pod template is the manager's
// configuration, and the fence holds run pods to it.
func managerFlag(t *testing.T, prefix string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if _, value, ok := strings.Cut(strings.TrimSpace(line), "- "+prefix); ok {
			return strings.Trim(value, `'"`)
		}
	}
	t.Fatalf("config/manager/manager.yaml has no flag %s", prefix)
	return ""
}

// asManager acts as the manager's ServiceAccount, as its token would.
func asManager(t *testing.T) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + releaseNS + ":" + managerSA}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bindTenant binds the tenant user to edit in tenantNS, and waits until RBAC
// lets it do what an editor does: without the wait, a refusal could come from
// a RoleBinding not seen yet rather than from the rule under test.
func bindTenant(ctx context.Context, t *testing.T, tenant kubernetes.Interface) {
	t.Helper()
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: tenantUser + "-edit", Namespace: tenantNS},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tenantUser}},
	}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatalf("binding the tenant to edit: %v", err)
	}
	for _, attrs := range []authorizationv1.ResourceAttributes{
		{Namespace: tenantNS, Verb: "create", Group: kquantv1alpha1.GroupVersion.Group, Resource: "quantjobs"},
		{Namespace: tenantNS, Verb: "impersonate", Resource: "serviceaccounts"},
		{Namespace: tenantNS, Verb: "create", Resource: "serviceaccounts", Subresource: "token"},
	} {
		wait.For(t, settle, "the tenant may "+attrs.Verb+" "+attrs.Resource, func() error {
			review, err := tenant.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
				&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			if !review.Status.Allowed {
				return fmt.Errorf("not allowed yet: %s", review.Status.Reason)
			}
			return nil
		})
	}
}
