// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package tenant

import (
	"context"
	"fmt"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// Resources the attacks write, spelled as the requests name them.
var (
	quantJobs         = kquantv1alpha1.GroupVersion.WithResource("quantjobs")
	quantCronJobs     = kquantv1alpha1.GroupVersion.WithResource("quantcronjobs")
	quantRuns         = kquantv1alpha1.GroupVersion.WithResource("quantruns")
	quantGatePolicies = kquantv1alpha1.GroupVersion.WithResource("quantgatepolicies")
	clusterRecipes    = kquantv1alpha1.GroupVersion.WithResource("clusterquantrecipes")
	gpuNodeProfiles   = kquantv1alpha1.GroupVersion.WithResource("gpunodeprofiles")
	nodes             = corev1.SchemeGroupVersion.WithResource("nodes")
	pods              = corev1.SchemeGroupVersion.WithResource("pods")
	leases            = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	roles             = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	roleBindings      = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
	admissionPolicies = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
)

const (
	// podUIDExtra is the user extra in which the API server puts the UID of
	// the pod a service-account token is bound to.
	podUIDExtra = "authentication.kubernetes.io/pod-uid"
	// nodeNameExtra is where it puts the node of that pod.
	nodeNameExtra = "authentication.kubernetes.io/node-name"
	// runTokenRefusal is why kquant-run-token-restriction refuses a token of
	// the run ServiceAccount to anyone but a kubelet.
	runTokenRefusal = "only the kubelet may request tokens for the ServiceAccount " + runSA
	// forgedVerdict is what a forger writes into a run's status.
	forgedVerdict = `{"status":{"phase":"Succeeded","results":{"verdict":"Pass"}}}`
	// The release namespace's objects of config/: the run pods' admission
	// policy and the manager's leader-election Role.
	runPodRestriction  = "kquant-run-pod-restriction"
	leaderElectionRole = "kquant-leader-election"
)

// attack is one attempt of the tenant, and what its refusal must say.
type attack struct {
	name string
	// try makes the attempt; its error is the API server's refusal.
	try func(ctx context.Context) error
	// wantMsg is part of the refusal's message: why it was refused.
	wantMsg string
}

// TestTenantCannotReachBeyondItsNamespace installs kquant from config/, makes
// a user the editor of tenantNS, and refuses every attack below; then nothing
// outside tenantNS has changed.
func TestTenantCannotReachBeyondItsNamespace(t *testing.T) {
	ctx := t.Context()
	installKquant(ctx, t)
	installFixtures(ctx, t)
	tn := newTenant(t)
	bindTenant(ctx, t, tn.kube)

	before, err := takeSnapshot(ctx, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, guarded := range []string{"nodes//" + gatedNode, "quantruns.kquant.dev/" + otherNS + "/" + runName} {
		if _, ok := before[guarded]; !ok {
			t.Fatalf("the snapshot misses %s, which it must guard", guarded)
		}
	}
	for _, a := range tn.attacks() {
		t.Run(a.name, func(t *testing.T) {
			err := a.try(ctx)
			if err == nil {
				t.Fatalf("allowed; want refused with a message containing %q", a.wantMsg)
			}
			// Forbidden (RBAC, impersonation, a policy), Invalid (the CRD's
			// schema and CEL) or BadRequest (TokenRequest's own checks): a
			// refusal of the attempt, not a conflict or a missing object.
			if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
				t.Fatalf("failed, but not refused by the API server: %v", err)
			}
			if !strings.Contains(err.Error(), a.wantMsg) {
				t.Errorf("refused with %q; want a message containing %q", err, a.wantMsg)
			}
			t.Logf("refused: %v", err)
		})
	}
	after, err := takeSnapshot(ctx, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if changed := before.changes(after); len(changed) > 0 {
		t.Errorf("the attacks changed what the tenant must leave alone:\n%s", strings.Join(changed, "\n"))
	}
}

// tenant is the editor of tenantNS, with its own client certificate.
type tenant struct {
	cfg  *rest.Config
	dyn  dynamic.Interface
	kube kubernetes.Interface
}

func newTenant(t *testing.T) *tenant {
	t.Helper()
	cfg, err := env.UserConfig(tenantUser)
	if err != nil {
		t.Fatal(err)
	}
	return &tenant{cfg: cfg, dyn: dynamic.NewForConfigOrDie(cfg), kube: kubernetes.NewForConfigOrDie(cfg)}
}

// attacks are the tenant's attempts, grouped by what they aim at. Each names
// in its comment the rule that refuses it.
func (tn *tenant) attacks() []attack {
	return []attack{
		// Nodes are the platform's: only a cluster-scoped QuantGatePolicy,
		// which edit cannot create, changes them.
		{
			name:    "a QuantJob that gates every node it reaches with NoExecute",
			try:     tn.create(quantJobs, tenantNS, validationJob("gate-every-node", "gate: {taint: NoExecute}")),
			wantMsg: "QuantGatePolicy",
		},
		{
			name: "a QuantCronJob whose job template gates nodes",
			try: tn.create(quantCronJobs, tenantNS, `
apiVersion: kquant.dev/v1alpha1
kind: QuantCronJob
metadata: {name: gate-nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
`+indent(validationSpec("gate: {label: true, taint: NoSchedule}"), "      ")),
			wantMsg: "QuantGatePolicy",
		},
		{
			name: "a QuantGatePolicy of its own",
			try: tn.create(quantGatePolicies, "", `
apiVersion: kquant.dev/v1alpha1
kind: QuantGatePolicy
metadata: {name: tenant-gate}
spec: {}`),
			wantMsg: `cannot create resource "quantgatepolicies"`,
		},
		{
			name:    "a label on a GPU node",
			try:     tn.patch(nodes, "", gpuNode, `{"metadata":{"labels":{"kquant.dev/fp8":"none"}}}`),
			wantMsg: `cannot patch resource "nodes"`,
		},
		{
			name:    "removing the platform team's gate taint from a node",
			try:     tn.update(nodes, "", gatedNode, func(o *unstructured.Unstructured) { unstructured.RemoveNestedField(o.Object, "spec", "taints") }),
			wantMsg: `cannot update resource "nodes"`,
		},

		// Cluster-scoped kinds are the platform's and the agents'.
		{
			name: "a ClusterQuantRecipe",
			try: tn.create(clusterRecipes, "", `
apiVersion: kquant.dev/v1alpha1
kind: ClusterQuantRecipe
metadata: {name: tenant-recipe}
spec: {scheme: Float8CurrentScaling}`),
			wantMsg: `cannot create resource "clusterquantrecipes"`,
		},
		{
			name:    "changing a catalog ClusterQuantRecipe every tenant uses",
			try:     tn.patch(clusterRecipes, "", catalogFP8, `{"spec":{"currentScaling":{"power2Scales":true}}}`),
			wantMsg: `cannot patch resource "clusterquantrecipes"`,
		},
		{
			name: "a GPUNodeProfile for a node that has no agent",
			try: tn.create(gpuNodeProfiles, "", `
apiVersion: kquant.dev/v1alpha1
kind: GPUNodeProfile
metadata: {name: `+gatedNode+`}`),
			wantMsg: `cannot create resource "gpunodeprofiles"`,
		},
		{
			name:    "marking a node's GPUs healthy in its GPUNodeProfile",
			try:     tn.patch(gpuNodeProfiles, "", gpuNode, `{"status":{"driverVersion":"999.0"}}`, "status"),
			wantMsg: `cannot patch resource "gpunodeprofiles/status"`,
		},

		// A run's results come only from the run pod the manager made for it.
		{
			name:    "a QuantRun created directly, bound to a GPU of its choice",
			try:     tn.create(quantRuns, tenantNS, boundRun("direct-run")),
			wantMsg: `cannot create resource "quantruns"`,
		},
		{
			name:    "writing its own run's status",
			try:     tn.patch(quantRuns, tenantNS, runName, forgedVerdict, "status"),
			wantMsg: `cannot patch resource "quantruns/status"`,
		},
		{
			name:    "moving its own run to another node",
			try:     tn.patch(quantRuns, tenantNS, runName, `{"spec":{"nodeName":"`+gatedNode+`"}}`),
			wantMsg: `cannot patch resource "quantruns"`,
		},
		{
			// The manager recovers an outcome from the run pod's termination
			// message when the pod's own write never landed.
			name: "a forged termination message in its run pod's status",
			try: tn.patch(pods, tenantNS, runName, `{"status":{"phase":"Succeeded","containerStatuses":[{"name":"run","image":"x","imageID":"","ready":false,"restartCount":0,`+
				`"state":{"terminated":{"exitCode":0,"message":"Pass: forged"}}}]}}`, "status"),
			wantMsg: `cannot patch resource "pods/status"`,
		},
		{
			name:    "a pod named like the next run, with the run ServiceAccount",
			try:     tn.create(pods, tenantNS, forgerPod(jobName+"-0-1", runSA)),
			wantMsg: "only the kquant manager",
		},
		{
			name:    "the run ServiceAccount, impersonated with a pod-UID extra",
			try:     tn.asRunSA(map[string][]string{podUIDExtra: {"00000000-0000-0000-0000-000000000000"}}).patch(quantRuns, tenantNS, runName, forgedVerdict, "status"),
			wantMsg: `cannot impersonate resource "userextras/` + podUIDExtra + `"`,
		},
		{
			name:    "the run ServiceAccount, impersonated without a pod",
			try:     tn.asRunSA(nil).patch(quantRuns, tenantNS, runName, forgedVerdict, "status"),
			wantMsg: "must be bound to a pod",
		},
		{
			name:    "a run ServiceAccount token bound to the tenant's own pod",
			try:     tn.forgeWithOwnPod,
			wantMsg: runTokenRefusal,
		},
		{
			name:    "a run ServiceAccount token bound to a Secret, writing the run's status",
			try:     tn.forgeWithSecretToken,
			wantMsg: runTokenRefusal,
		},
		{
			name:    "a run ServiceAccount token bound to the manager's run pod",
			try:     tn.forgeWithRunPodToken,
			wantMsg: runTokenRefusal,
		},
		{
			name: "binding the run ClusterRole to its own ServiceAccount",
			try: tn.create(roleBindings, tenantNS, `
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: app-writes-runs}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: `+runSA+`}
subjects: [{kind: ServiceAccount, name: `+appSA+`, namespace: `+tenantNS+`}]`),
			wantMsg: `cannot create resource "rolebindings"`,
		},

		// Another tenant's namespace is out of reach.
		{
			name:    "a QuantJob in another tenant's namespace",
			try:     tn.create(quantJobs, otherNS, validationJob("intruder", "")),
			wantMsg: `cannot create resource "quantjobs" in API group "kquant.dev" in the namespace "` + otherNS + `"`,
		},
		{
			name:    "deleting another tenant's run",
			try:     tn.delete(quantRuns, otherNS, runName),
			wantMsg: `cannot delete resource "quantruns" in API group "kquant.dev" in the namespace "` + otherNS + `"`,
		},

		// A schedule or a duration cannot stall or fail the manager.
		{
			name:    "a schedule that never fires (February 31st)",
			try:     tn.create(quantCronJobs, tenantNS, cronJob("never", `schedule: "0 0 31 2 *"`)),
			wantMsg: "spec.schedule",
		},
		{
			name:    "a schedule with a CRON_TZ prefix and no schedule",
			try:     tn.create(quantCronJobs, tenantNS, cronJob("tz-prefix", `schedule: "CRON_TZ=UTC"`)),
			wantMsg: "spec.schedule",
		},
		{
			name:    "an activeDeadlineSeconds past time.Duration",
			try:     tn.create(quantJobs, tenantNS, validationJob("overflow", "activeDeadlineSeconds: 10000000000")),
			wantMsg: "spec.activeDeadlineSeconds",
		},
		{
			name:    "a ttlSecondsAfterFinished past time.Duration",
			try:     tn.create(quantJobs, tenantNS, validationJob("forever", "ttlSecondsAfterFinished: 10000000000")),
			wantMsg: "spec.ttlSecondsAfterFinished",
		},
		{
			name:    "a startingDeadlineSeconds past time.Duration",
			try:     tn.create(quantCronJobs, tenantNS, cronJob("late", `schedule: "0 3 * * *"`+"\n  startingDeadlineSeconds: 10000000000")),
			wantMsg: "spec.startingDeadlineSeconds",
		},

		// The kubelets', the agents' and the manager's objects are theirs.
		{
			name:    "a node Lease in kube-node-lease that keeps a lost node alive",
			try:     tn.create(leases, nodeLeaseNS, lease(gatedNode)),
			wantMsg: `cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "` + nodeLeaseNS + `"`,
		},
		{
			name:    "an agent Lease in the release namespace",
			try:     tn.create(leases, releaseNS, lease(kquantv1alpha1.AgentLeaseName(gatedNode))),
			wantMsg: `cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "` + releaseNS + `"`,
		},
		{
			name:    "widening the manager's Role in the release namespace",
			try:     tn.patch(roles, releaseNS, leaderElectionRole, `{"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`),
			wantMsg: `cannot patch resource "roles" in API group "rbac.authorization.k8s.io" in the namespace "` + releaseNS + `"`,
		},
		{
			name:    "a token of the manager's ServiceAccount",
			try:     tn.token(releaseNS, managerSA, nil),
			wantMsg: `cannot create resource "serviceaccounts/token" in API group "" in the namespace "` + releaseNS + `"`,
		},
		{
			name:    "impersonating the manager",
			try:     tn.impersonating("system:serviceaccount:"+releaseNS+":"+managerSA, nil).create(pods, tenantNS, forgerPod("as-manager", runSA)),
			wantMsg: `cannot impersonate resource "serviceaccounts" in API group "" in the namespace "` + releaseNS + `"`,
		},
		{
			name:    "impersonating a node's agent",
			try:     tn.impersonating("system:serviceaccount:"+releaseNS+":"+agentSA, map[string][]string{nodeNameExtra: {gatedNode}}).patch(gpuNodeProfiles, "", gpuNode, `{"status":{"driverVersion":"999.0"}}`, "status"),
			wantMsg: `cannot impersonate resource "serviceaccounts" in API group "" in the namespace "` + releaseNS + `"`,
		},
		{
			name:    "deleting the run-pod admission policy",
			try:     tn.delete(admissionPolicies, "", runPodRestriction),
			wantMsg: `cannot delete resource "validatingadmissionpolicies"`,
		},
	}
}

// create creates the object of manifest in ns.
func (tn *tenant) create(res schema.GroupVersionResource, ns, manifest string) func(context.Context) error {
	return func(ctx context.Context) error {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
			return fmt.Errorf("the attack's manifest: %w", err)
		}
		_, err := tn.dyn.Resource(res).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		return err
	}
}

// patch merge-patches an object or its subresource.
func (tn *tenant) patch(res schema.GroupVersionResource, ns, name, patch string, subresource ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := tn.dyn.Resource(res).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, subresource...)
		return err
	}
}

// update changes an object as read by the cluster admin (the tenant may not
// even read it) and writes it as the tenant.
func (tn *tenant) update(res schema.GroupVersionResource, ns, name string, change func(*unstructured.Unstructured)) func(context.Context) error {
	return func(ctx context.Context) error {
		obj, err := dynamic.NewForConfigOrDie(env.Config).Resource(res).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading %s %s as the admin: %w", res.Resource, name, err)
		}
		change(obj)
		_, err = tn.dyn.Resource(res).Namespace(ns).Update(ctx, obj, metav1.UpdateOptions{})
		return err
	}
}

func (tn *tenant) delete(res schema.GroupVersionResource, ns, name string) func(context.Context) error {
	return func(ctx context.Context) error {
		return tn.dyn.Resource(res).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}
}

// impersonating is the tenant acting as user with extra, through its own
// rights to impersonate (edit may impersonate its namespace's
// ServiceAccounts).
func (tn *tenant) impersonating(user string, extra map[string][]string) *tenant {
	cfg := rest.CopyConfig(tn.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Extra: extra}
	return &tenant{cfg: cfg, dyn: dynamic.NewForConfigOrDie(cfg), kube: kubernetes.NewForConfigOrDie(cfg)}
}

func (tn *tenant) asRunSA(extra map[string][]string) *tenant {
	return tn.impersonating("system:serviceaccount:"+tenantNS+":"+runSA, extra)
}

// token asks for a token of ServiceAccount ns/name, bound to ref when set.
func (tn *tenant) token(ns, name string, ref *authenticationv1.BoundObjectReference) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := tn.mintToken(ctx, ns, name, ref)
		return err
	}
}

func (tn *tenant) mintToken(ctx context.Context, ns, name string, ref *authenticationv1.BoundObjectReference) (string, error) {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600), BoundObjectRef: ref}}
	got, err := tn.kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return got.Status.Token, nil
}

// withToken is whoever holds token, with no client certificate.
func withToken(token string) *tenant {
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = token
	return &tenant{cfg: cfg, dyn: dynamic.NewForConfigOrDie(cfg), kube: kubernetes.NewForConfigOrDie(cfg)}
}

// forgeWithOwnPod starts a pod of the tenant's own ServiceAccount and asks
// for a run ServiceAccount token bound to it, which would carry that pod's
// name and UID.
func (tn *tenant) forgeWithOwnPod(ctx context.Context) error {
	pod, err := tn.kube.CoreV1().Pods(tenantNS).Create(ctx, podObject("own-pod", appSA), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating its own pod, which edit allows: %w", err)
	}
	return tn.token(tenantNS, runSA, &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID})(ctx)
}

// forgeWithSecretToken mints a run ServiceAccount token bound to a Secret of
// its own, which edit allows, and writes its run's verdict with it.
func (tn *tenant) forgeWithSecretToken(ctx context.Context) error {
	secret, err := tn.kube.CoreV1().Secrets(tenantNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token-anchor"}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating its own Secret, which edit allows: %w", err)
	}
	token, err := tn.mintToken(ctx, tenantNS, runSA, &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: secret.Name, UID: secret.UID})
	if err != nil {
		return err
	}
	return withToken(token).patch(quantRuns, tenantNS, runName, forgedVerdict, "status")(ctx)
}

// forgeWithRunPodToken mints a run ServiceAccount token bound to the run pod
// the manager made, which would carry that pod's name and UID, and writes the
// run's verdict with it.
func (tn *tenant) forgeWithRunPodToken(ctx context.Context) error {
	pod, err := tn.kube.CoreV1().Pods(tenantNS).Get(ctx, runName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the run pod, which edit allows: %w", err)
	}
	token, err := tn.mintToken(ctx, tenantNS, runSA, &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID})
	if err != nil {
		return err
	}
	return withToken(token).patch(quantRuns, tenantNS, runName, forgedVerdict, "status")(ctx)
}

// validationSpec is a valid Validation job spec plus extra fields.
func validationSpec(extra string) string {
	return `recipeRef: {name: ` + recipeName + `}
mode: Validation
level: Quick
workload: {operation: Quantize, shapes: [{rows: 1024, cols: 1024}]}
placement: {policy: AnyGPU}
tolerances: {minSNRdB: "200"}
` + extra
}

func validationJob(name, extra string) string {
	return `
apiVersion: kquant.dev/v1alpha1
kind: QuantJob
metadata: {name: ` + name + `}
spec:
` + indent(validationSpec(extra), "  ")
}

func cronJob(name, schedule string) string {
	return `
apiVersion: kquant.dev/v1alpha1
kind: QuantCronJob
metadata: {name: ` + name + `}
spec:
  ` + schedule + `
  jobTemplate:
    spec:
` + indent(validationSpec(""), "      ")
}

func boundRun(name string) string {
	return `
apiVersion: kquant.dev/v1alpha1
kind: QuantRun
metadata: {name: ` + name + `}
spec:
  jobRef: {name: ` + jobName + `}
  recipe: {name: ` + recipeName + `, spec: {scheme: Float8CurrentScaling}}
  mode: Validation
  workload: {operation: Quantize, shapes: [{rows: 1024, cols: 1024}]}
  execution: {graphs: Both, iterations: 20, warmup: 3}
  nodeName: ` + gpuNode
}

func lease(name string) string {
	return `
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: ` + name + `}
spec: {holderIdentity: ` + name + `, leaseDurationSeconds: 3600}`
}

// podObject is a plain pod of ServiceAccount sa.
func podObject(name, sa string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			ServiceAccountName: sa,
			Containers:         []corev1.Container{{Name: "main", Image: "busybox"}},
		},
	}
}

// forgerPod is podObject as a manifest.
func forgerPod(name, sa string) string {
	data, err := yaml.Marshal(podObject(name, sa))
	if err != nil {
		// A Pod always marshals; a failure here is a bug in the types.
		panic(fmt.Sprintf("marshalling pod %s: %v", name, err))
	}
	return "apiVersion: v1\nkind: Pod\n" + string(data)
}

func indent(s, prefix string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString(prefix + line)
	}
	return b.String()
}
