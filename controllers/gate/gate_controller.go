package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/conflict"
	"github.com/kquant/kquant/controllers/fleet"
	"github.com/kquant/kquant/controllers/indexer"
	"github.com/kquant/kquant/controllers/nodelabels"
	"github.com/kquant/kquant/internal/logging"
)

// ControllerName is the controller's stable name.
const ControllerName = "gate"

// Reconciler keeps the gate labels and taints of one Node (request name = node
// name) in line with the node's finished gated runs.
type Reconciler struct {
	client client.Client
	// nodes reads full Nodes (taints) from the API server: the manager caches
	// Nodes as metadata only, and a gate write is rare.
	nodes client.Reader
}

// New returns a Reconciler reading runs and jobs through c (the cache) and
// Nodes through nodes (the API server).
func New(c client.Client, nodes client.Reader) *Reconciler {
	return &Reconciler{client: c, nodes: nodes}
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantjobs,verbs=get;list;watch

// Reconcile patches the Node's gate labels and taints, only when they differ.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obs, err := r.observe(ctx, req.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	states := Decide(obs)
	if len(states) == 0 {
		return reconcile.Result{}, nil
	}
	node := &corev1.Node{}
	if err := r.nodes.Get(ctx, types.NamespacedName{Name: req.Name}, node); err != nil {
		// No Node (a simulated agent): nothing to gate.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	labelChanges, taints, changed := Changes(node.Labels, node.Spec.Taints, states)
	if !changed {
		return reconcile.Result{}, nil
	}
	// Labels are merged key by key; taints is a list that a merge patch
	// replaces whole, so the patch is conditional on the version read and a
	// conflict (someone else changed the Node) retries from a fresh read.
	patch := map[string]any{
		"metadata": map[string]any{"labels": labelChanges, "resourceVersion": node.ResourceVersion},
		"spec":     map[string]any{"taints": taints},
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("encoding gate patch of node %s: %w", req.Name, err)
	}
	if err := r.client.Patch(ctx, node, client.RawPatch(types.MergePatchType, body)); err != nil {
		return conflict.Requeue(fmt.Errorf("patching gates of node %s: %w", req.Name, err))
	}
	logging.FromContext(ctx).Info("Node gates updated", "node", req.Name, "labels", labelChanges, "taints", len(taints))
	return reconcile.Result{}, nil
}

// observe returns the node's finished runs of gated jobs.
func (r *Reconciler) observe(ctx context.Context, node string) ([]Observation, error) {
	// Read only: no deep copies of the node's runs, which this controller
	// lists again on every run that finishes there.
	runs := &kquantv1alpha1.QuantRunList{}
	if err := r.client.List(ctx, runs, client.MatchingFields{indexer.RunNodeKey: node}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing runs of node %s: %w", node, err)
	}
	gates := map[types.NamespacedName]*kquantv1alpha1.Gate{}
	var out []Observation
	for i := range runs.Items {
		run := &runs.Items[i]
		if !hasVerdict(run) {
			continue
		}
		jobKey := types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.JobRef.Name}
		g, seen := gates[jobKey]
		if !seen {
			job := &kquantv1alpha1.QuantJob{}
			if err := r.client.Get(ctx, jobKey, job); client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("getting job %s: %w", jobKey, err)
			} else if err == nil {
				g = job.Spec.Gate
			}
			gates[jobKey] = g
		}
		if g == nil {
			continue
		}
		o := Observation{
			Family:  nodelabels.Family(run.Spec.Recipe.Spec.Scheme),
			GPU:     run.Spec.GPUUUID,
			Run:     run.Name,
			Verdict: run.Status.Results.Verdict,
			Gate:    *g,
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

// hasVerdict reports whether run succeeded with a verdict.
func hasVerdict(run *kquantv1alpha1.QuantRun) bool {
	return run.Spec.NodeName != "" && run.Status.Phase == kquantv1alpha1.RunPhaseSucceeded &&
		run.Status.Results != nil && run.Status.Results.Verdict != ""
}

// runNode maps a finished run to its node.
func runNode(_ context.Context, obj client.Object) []reconcile.Request {
	run, ok := obj.(*kquantv1alpha1.QuantRun)
	if !ok || !hasVerdict(run) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: run.Spec.NodeName}}}
}

// gateLabelsChanged passes Node updates that change a gate label, so that a
// gate removed by hand while its failure stands comes back (one owner).
func gateLabelsChanged() predicate.Predicate {
	gates := func(o client.Object) map[string]string {
		out := map[string]string{}
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
			return !maps.Equal(gates(e.ObjectOld), gates(e.ObjectNew))
		},
	}
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&kquantv1alpha1.QuantRun{}, handler.EnqueueRequestsFromMapFunc(runNode)).
		WatchesMetadata(fleet.NodeMetadata(), &handler.EnqueueRequestForObject{}, builder.WithPredicates(gateLabelsChanged())).
		Complete(r)
}
