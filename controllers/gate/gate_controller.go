// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/gateowners"
	"github.com/kquant/kquant/controllers/internal/conflict"
	"github.com/kquant/kquant/controllers/internal/fleet"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/controllers/internal/nodewriter"
	gatedomain "github.com/kquant/kquant/domain/gate"
	"github.com/kquant/kquant/domain/supportlabels"
	"github.com/kquant/kquant/internal/logging"
)

// ControllerName is the controller's stable name.
const ControllerName = "gate"

// ReasonGateOwnersUnreadable: the Node's kquant.dev/gate-owners or
// kquant.dev/gate-conditions record is not valid JSON; no gate on that node
// changes until someone repairs or removes it.
const ReasonGateOwnersUnreadable = "GateOwnersUnreadable"

// Reconciler keeps the gate labels and taints of one Node (request name = node
// name) in line with the QuantGatePolicies' validation runs there.
type Reconciler struct {
	client client.Client
	// nodes reads full Nodes (taints) from the API server: the manager caches
	// Nodes as metadata only, and a gate write is rare.
	nodes    client.Reader
	recorder events.EventRecorder
	clock    clock.PassiveClock
	// namespace is the manager's own: only runs there, of jobs controlled by
	// a QuantGatePolicy, count. A tenant cannot create jobs in it.
	namespace string
}

// New returns a Reconciler reading runs, jobs and policies through c (the
// cache) and Nodes through nodes (the API server), counting only the runs of
// namespace.
func New(c client.Client, nodes client.Reader, recorder events.EventRecorder, clk clock.PassiveClock, namespace string) *Reconciler {
	return &Reconciler{client: c, nodes: nodes, recorder: recorder, clock: clk, namespace: namespace}
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantjobs,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantgatepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=clusterquantrecipes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile patches the Node's gate labels, taints, conditions and ownership
// records, only when they differ from the plan, and records an Event for
// every change. It comes back when a True condition is due to go stale.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	meta := fleet.NodeMetadata()
	if err := r.client.Get(ctx, req.NamespacedName, meta); err != nil {
		// No Node (a simulated agent): nothing to gate.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	policies := map[string]*kquantv1alpha1.QuantGatePolicy{}
	obs, err := r.observe(ctx, req.Name, policies)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(obs) == 0 && meta.Annotations[kquantv1alpha1.AnnotationGateOwners] == "" && meta.Annotations[kquantv1alpha1.AnnotationGateConditions] == "" {
		return reconcile.Result{}, nil
	}
	node := &corev1.Node{}
	if err := r.nodes.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	owners, err := gateowners.Of(node.Annotations)
	if err != nil {
		r.recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonGateOwnersUnreadable, "Gate", "%v: no gate changes on this node until it is repaired or removed", err)
		return reconcile.Result{}, nil
	}
	record, err := gateowners.ConditionsOf(node.Annotations)
	if err != nil {
		r.recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonGateOwnersUnreadable, "Gate", "%v: no gate changes on this node until it is repaired or removed", err)
		return reconcile.Result{}, nil
	}
	for _, o := range owners {
		if _, err := r.policy(ctx, o.Policy, "", policies); err != nil {
			return reconcile.Result{}, err
		}
	}
	live, err := r.planPolicies(ctx, policies)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := r.clock.Now()
	findings := gatedomain.Decide(obs)
	plan := gatedomain.PlanNode(gatedomain.Node{Labels: node.Labels, Taints: node.Spec.Taints, Owners: owners}, live, findings, now)
	conds := gatedomain.PlanConditions(node.Status.Conditions, record, plan.Owners, live, findings, now)
	if plan.Write || !maps.Equal(record, conds.Record) {
		if err := r.patch(ctx, node, plan, conds.Record); err != nil {
			return conflict.Requeue(err)
		}
		for _, c := range plan.Changes {
			r.recorder.Eventf(node, policyOrNil(policies[c.Policy]), corev1.EventTypeNormal, c.Reason, "Gate", "%s", c.Message)
		}
		logging.FromContext(ctx).Info("Node gates updated", "node", req.Name, "changes", len(plan.Changes))
	}
	if !gatedomain.ConditionsEqual(node.Status.Conditions, record, conds.Conditions) {
		if _, err := nodewriter.WriteConditions(ctx, r.client, node, conditionWrite(conds, record)); err != nil {
			return conflict.Requeue(err)
		}
		for _, c := range gatedomain.ConditionChanges(node.Status.Conditions, record, conds) {
			r.recorder.Eventf(node, policyOrNil(policies[c.Policy]), corev1.EventTypeNormal, c.Reason, "Gate", "%s", c.Message)
		}
	}
	for _, c := range append(plan.Blocked, conds.Blocked...) {
		r.recorder.Eventf(policies[c.Policy], node, corev1.EventTypeWarning, c.Reason, "Gate", "%s on node %s", c.Message, node.Name)
	}
	return reconcile.Result{RequeueAfter: conds.RequeueAfter}, nil
}

// patch writes the plan's labels, taints and ownership records in one Node
// write, and then, when they changed, the gate's whole set of Node
// conditions; the condition record goes before the conditions it names, so
// that a condition kquant sets is never without its record. Each write is
// conditional on the version read (nodewriter), and a conflict (someone else
// changed the Node) retries from a fresh read.
func (r *Reconciler) patch(ctx context.Context, node *corev1.Node, plan gatedomain.Plan, conditions gateowners.Conditions) error {
	record, err := plan.Owners.Encode()
	if err != nil {
		return err
	}
	condRecord, err := conditions.Encode()
	if err != nil {
		return err
	}
	marks := nodewriter.Marks{
		Labels:      plan.Labels,
		Annotations: map[string]any{kquantv1alpha1.AnnotationGateOwners: record, kquantv1alpha1.AnnotationGateConditions: condRecord},
		Taints:      plan.Taints, SetTaints: true,
	}
	rv, err := nodewriter.Write(ctx, r.client, node, marks)
	if err != nil {
		return err
	}
	// The write changed no condition: the conditions as read still hold at
	// the new version.
	node.ResourceVersion = rv
	return nil
}

// conditionWrite is plan as a Node write: its conditions set, and every type
// of record (the node's, as read) that the plan no longer sets removed.
func conditionWrite(p gatedomain.ConditionPlan, record gateowners.Conditions) nodewriter.Conditions {
	w := nodewriter.Conditions{Set: p.Conditions}
	for _, t := range slices.Sorted(maps.Keys(record)) {
		if !slices.ContainsFunc(p.Conditions, func(c corev1.NodeCondition) bool { return string(c.Type) == t }) {
			w.Remove = append(w.Remove, corev1.NodeConditionType(t))
		}
	}
	return w
}

// observe returns the node's finished runs of QuantGatePolicies' validation
// jobs, and adds the live policies that control them to policies. A run
// counts only when it is in the manager's namespace and its job's controller
// is an existing QuantGatePolicy of the same UID: a tenant's job, whatever
// its owner references say, never gates or clears a node.
func (r *Reconciler) observe(ctx context.Context, node string, policies map[string]*kquantv1alpha1.QuantGatePolicy) ([]gatedomain.Observation, error) {
	// Read only: no deep copies of the node's runs, which this controller
	// lists again on every run that finishes there.
	runs := &kquantv1alpha1.QuantRunList{}
	if err := r.client.List(ctx, runs, client.InNamespace(r.namespace), client.MatchingFields{indexer.RunNodeKey: node}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing runs of node %s: %w", node, err)
	}
	jobPolicy := map[string]string{}
	var out []gatedomain.Observation
	for i := range runs.Items {
		run := &runs.Items[i]
		if !hasVerdict(run) {
			continue
		}
		name, seen := jobPolicy[run.Spec.JobRef.Name]
		if !seen {
			var err error
			if name, err = r.jobPolicy(ctx, run.Spec.JobRef.Name, policies); err != nil {
				return nil, err
			}
			jobPolicy[run.Spec.JobRef.Name] = name
		}
		if name == "" {
			continue
		}
		o := gatedomain.Observation{
			Policy:  name,
			Family:  supportlabels.Family(run.Spec.Recipe.Spec.Scheme),
			GPU:     run.Spec.GPUUUID,
			Run:     run.Name,
			Verdict: run.Status.Results.Verdict,
			Reason:  run.Status.Results.Reason,
		}
		if a := run.Status.AllocatedGPU; a != nil && a.UUID != "" {
			o.GPU = a.UUID
		}
		if t := run.Status.CompletionTime; t != nil {
			o.Completed = t.Time
		}
		if o.Family != "" {
			out = append(out, o)
		}
	}
	return out, nil
}

// jobPolicy returns the name of the live QuantGatePolicy that controls the
// job of the manager's namespace, or "" when none does.
func (r *Reconciler) jobPolicy(ctx context.Context, jobName string, policies map[string]*kquantv1alpha1.QuantGatePolicy) (string, error) {
	job := &kquantv1alpha1.QuantJob{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: r.namespace, Name: jobName}, job); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	owner := metav1.GetControllerOf(job)
	if owner == nil || owner.Kind != "QuantGatePolicy" || owner.APIVersion != kquantv1alpha1.GroupVersion.String() {
		return "", nil
	}
	p, err := r.policy(ctx, owner.Name, owner.UID, policies)
	if err != nil || p == nil {
		return "", err
	}
	return p.Name, nil
}

// policy returns the live policy name (of uid, when uid is set) from the
// cache and remembers it in policies; nil when there is none, or it is being
// deleted (its gates then go with it).
func (r *Reconciler) policy(ctx context.Context, name string, uid types.UID, policies map[string]*kquantv1alpha1.QuantGatePolicy) (*kquantv1alpha1.QuantGatePolicy, error) {
	if p, ok := policies[name]; ok {
		if uid != "" && p.UID != uid {
			return nil, nil
		}
		return p, nil
	}
	p := &kquantv1alpha1.QuantGatePolicy{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if !p.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	policies[name] = p
	if uid != "" && p.UID != uid {
		return nil, nil
	}
	return p, nil
}

// planPolicies is what PlanNode needs of the live policies, each with the
// family of its ClusterQuantRecipe (unknown while the recipe is missing).
func (r *Reconciler) planPolicies(ctx context.Context, policies map[string]*kquantv1alpha1.QuantGatePolicy) (map[string]gatedomain.Policy, error) {
	out := make(map[string]gatedomain.Policy, len(policies))
	for name, p := range policies {
		pol := gatedomain.Policy{Name: name, Created: p.CreationTimestamp.Time, Actions: p.Spec.Actions, Recipe: p.Spec.RecipeRef.Name}
		if p.Spec.Period != nil {
			pol.Period = p.Spec.Period.Duration
		}
		recipe := &kquantv1alpha1.ClusterQuantRecipe{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: p.Spec.RecipeRef.Name}, recipe); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("getting ClusterQuantRecipe %s of policy %s: %w", p.Spec.RecipeRef.Name, name, err)
		} else if err == nil {
			pol.Family = supportlabels.Family(recipe.Spec.Scheme)
		}
		out[name] = pol
	}
	return out, nil
}

// policyOrNil is p as an Event's related object: nil for a gone policy (a
// typed nil would not be).
func policyOrNil(p *kquantv1alpha1.QuantGatePolicy) runtime.Object {
	if p == nil {
		return nil
	}
	return p
}

// hasVerdict reports whether run succeeded with a verdict.
func hasVerdict(run *kquantv1alpha1.QuantRun) bool {
	return run.Spec.NodeName != "" && run.Status.Phase == kquantv1alpha1.RunPhaseSucceeded &&
		run.Status.Results != nil && run.Status.Results.Verdict != ""
}

// runNode maps a finished run of the manager's namespace to its node.
func (r *Reconciler) runNode(_ context.Context, obj client.Object) []reconcile.Request {
	run, ok := obj.(*kquantv1alpha1.QuantRun)
	if !ok || run.Namespace != r.namespace || !hasVerdict(run) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: run.Spec.NodeName}}}
}

// policyNodes maps a policy to the nodes where it owns a key: its actions
// changed, or it is gone and its gates must go.
func (r *Reconciler) policyNodes(ctx context.Context, obj client.Object) []reconcile.Request {
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.client.List(ctx, nodes, client.MatchingFields{indexer.NodeGatePolicyKey: obj.GetName()}); err != nil {
		logging.FromContext(ctx).Error(err, "Listing the nodes of a gate policy", "quantGatePolicy", obj.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: n.Name}})
	}
	return out
}

// gateMarksChanged passes Node updates that change a gate label or the
// ownership record: a gate removed by hand while its failure stands comes
// back, and a key freed by one policy can be claimed by another.
func gateMarksChanged() predicate.Predicate {
	marks := func(o client.Object) map[string]string {
		out := map[string]string{
			kquantv1alpha1.AnnotationGateOwners:     o.GetAnnotations()[kquantv1alpha1.AnnotationGateOwners],
			kquantv1alpha1.AnnotationGateConditions: o.GetAnnotations()[kquantv1alpha1.AnnotationGateConditions],
		}
		for k, v := range o.GetLabels() {
			if strings.HasPrefix(k, kquantv1alpha1.GateLabelPrefix) {
				out[k] = v
			}
		}
		return out
	}
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !maps.Equal(marks(e.ObjectOld), marks(e.ObjectNew))
		},
	}
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&kquantv1alpha1.QuantRun{}, handler.EnqueueRequestsFromMapFunc(r.runNode)).
		Watches(&kquantv1alpha1.QuantGatePolicy{}, handler.EnqueueRequestsFromMapFunc(r.policyNodes)).
		WatchesMetadata(fleet.NodeMetadata(), &handler.EnqueueRequestForObject{}, builder.WithPredicates(gateMarksChanged())).
		Complete(r)
}
