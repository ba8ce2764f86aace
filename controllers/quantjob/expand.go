// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/validation"
	"github.com/kquant/kquant/controllers/internal/fleet"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/domain/scheduling"
)

// expand resolves the recipe, evaluates the fleet and creates the first
// attempt of every slot that has no run yet. It returns the runs that exist
// afterwards and, when it created none, why.
func (r *Reconciler) expand(ctx context.Context, job *kquantv1alpha1.QuantJob, runs []kquantv1alpha1.QuantRun, now time.Time) ([]kquantv1alpha1.QuantRun, outcome, error) {
	recipe, err := r.getRecipe(ctx, job)
	if apierrors.IsNotFound(err) {
		// Waiting, not failing: a job applied before its recipe (kubectl apply -f
		// dir/ sorts by name) starts as soon as the recipe exists.
		return runs, outcome{waitReason: kquantv1alpha1.ReasonRecipeNotFound,
			waitMessage: describeRecipe(job) + " not found"}, nil
	} else if err != nil {
		return nil, outcome{}, fmt.Errorf("getting recipe %s: %w", job.Spec.RecipeRef.Name, err)
	}
	if problems := validation.QuantRecipeSpecProblems(&recipe.spec); len(problems) > 0 {
		return runs, outcome{failReason: kquantv1alpha1.ReasonRecipeInvalid,
			failMessage: fmt.Sprintf("%s %s is invalid: %s", recipe.kind, recipe.name, strings.Join(problems, "; "))}, nil
	}
	if errs := validation.ValidateRecipeWorkload(&recipe.spec, &job.Spec.Workload, field.NewPath("spec", "workload")); len(errs) > 0 {
		return runs, outcome{failReason: kquantv1alpha1.ReasonRecipeInvalid,
			failMessage: fmt.Sprintf("%s %s cannot run this workload: %s", recipe.kind, recipe.name, errs.ToAggregate())}, nil
	}
	req, err := scheduling.NewRequirements(&recipe.spec, &job.Spec.Placement)
	if err != nil {
		return runs, outcome{waitReason: kquantv1alpha1.ReasonUnschedulable, waitMessage: err.Error()}, nil //nolint:nilerr // a placement that cannot be met is the job's condition, not a reconcile error
	}
	ev, err := r.evaluate(ctx, &recipe.spec, &job.Spec.Placement, &req, now)
	if err != nil {
		return nil, outcome{}, err
	}
	slots := scheduling.Expand(job.Spec.Placement.Policy, ev.eligible)
	if len(slots) == 0 {
		return runs, outcome{waitReason: kquantv1alpha1.ReasonUnschedulable, waitMessage: scheduling.UnschedulableMessage(ev.results)}, nil
	}
	if limit := ptr.Deref(job.Spec.Placement.MaxRuns, DefaultMaxRuns); len(slots) > int(limit) {
		// Before any run exists: a job over its limit fills no namespace.
		return runs, outcome{failReason: kquantv1alpha1.ReasonTooManyRuns, failMessage: fmt.Sprintf(
			"placement %s needs %d runs, more than spec.placement.maxRuns (%d); raise it or narrow the placement",
			job.Spec.Placement.Policy, len(slots), limit)}, nil
	}
	snapshot := recipe.snapshot()
	have := map[int]bool{}
	for i := range runs {
		have[quantrun.Slot(&runs[i])] = true
	}
	var missing []*kquantv1alpha1.QuantRun
	for _, s := range slots {
		if !have[s.Index] {
			missing = append(missing, newRun(job, s.Index, 0, snapshot, s.TargetNode, s.TargetGPU, nil, nil))
		}
	}
	created, err := r.createRuns(ctx, job, missing)
	if apierrors.IsInvalid(err) {
		// The API server checks the rules that need the recipe and the
		// workload together (QuantRunSpec's, such as the group alignment)
		// when the run is created: retrying cannot help.
		return runs, outcome{failReason: kquantv1alpha1.ReasonRecipeInvalid,
			failMessage: fmt.Sprintf("%s %s does not fit the job: %v", recipe.kind, recipe.name, err)}, nil
	} else if err != nil {
		return nil, outcome{}, err
	}
	runs = append(runs, created...)
	var out outcome
	if n := len(created); n > 0 {
		out.expanded = &expansion{created: n, message: fmt.Sprintf("created %d runs (%s over %d eligible GPUs%s); recipe %s generation %d: %s",
			n, job.Spec.Placement.Policy, len(ev.eligible), migNote(ev.results), recipe.name, recipe.generation, snapshot.Key)}
	}
	return runs, out, nil
}

// migNote is the RunsCreated event's clause on MIG-enabled GPUs the job
// left out for want of spec.placement.migSlices: Include.
func migNote(results []scheduling.NodeResult) string {
	if note := scheduling.MIGSkippedNote(results); note != "" {
		return "; " + note
	}
	return ""
}

// evaluate evaluates the fleet for req, or reuses an evaluation of the same
// requirement made within EvaluationTTL. The results are shared: read only.
func (r *Reconciler) evaluate(ctx context.Context, recipe *kquantv1alpha1.QuantRecipeSpec, placement *kquantv1alpha1.Placement, req *scheduling.Requirements, now time.Time) (*evaluation, error) {
	key := scheduling.RequirementKey(recipe, placement)
	if ev, ok := r.evaluations.get(key, now); ok {
		return ev, nil
	}
	epoch := r.evaluations.begin()
	nodes, err := fleet.Load(ctx, r.client, r.leaseNamespace)
	if err != nil {
		return nil, err
	}
	ev := newEvaluation(scheduling.Evaluate(nodes, req, now))
	r.evaluations.put(key, ev, now, epoch)
	return ev, nil
}

// newRun is attempt of slot, with the job's settings and the recipe snapshot.
func newRun(job *kquantv1alpha1.QuantJob, slot, attempt int, snapshot kquantv1alpha1.RecipeSnapshot, targetNode, targetGPU string, avoidGPUs, avoidNodes []string) *kquantv1alpha1.QuantRun {
	ann := map[string]string{quantrun.AnnotationSlot: strconv.Itoa(slot)}
	if targetNode != "" {
		ann[quantrun.AnnotationTargetNode] = targetNode
	}
	if targetGPU != "" {
		ann[quantrun.AnnotationTargetGPU] = targetGPU
	}
	if len(avoidGPUs) > 0 {
		ann[quantrun.AnnotationAvoidGPUs] = strings.Join(avoidGPUs, ",")
	}
	if len(avoidNodes) > 0 {
		ann[quantrun.AnnotationAvoidNodes] = strings.Join(avoidNodes, ",")
	}
	labels := map[string]string{kquantv1alpha1.LabelJob: quantrun.JobLabelValue(job.Name)}
	if q := job.Labels[quantrun.LabelKueueQueue]; q != "" {
		// A job that names a Kueue LocalQueue passes it to its run pods.
		labels[quantrun.LabelKueueQueue] = q
	}
	if kquantv1alpha1.IsIdleValidation(job) {
		// Its run pods take the idle PriorityClass (runpod.PriorityClassFor).
		labels[kquantv1alpha1.LabelIdleValidation] = "true"
	}
	mode := job.Spec.Mode
	if mode == "" {
		mode = kquantv1alpha1.JobModeValidation
	}
	return &kquantv1alpha1.QuantRun{
		ObjectMeta: metav1.ObjectMeta{
			Name:        quantrun.Name(job.Name, slot, attempt),
			Namespace:   job.Namespace,
			Labels:      labels,
			Annotations: ann,
		},
		Spec: kquantv1alpha1.QuantRunSpec{
			JobRef:     kquantv1alpha1.JobReference{Name: job.Name, UID: job.UID},
			Recipe:     *snapshot.DeepCopy(),
			Mode:       mode,
			Workload:   *job.Spec.Workload.DeepCopy(),
			Execution:  kquantv1alpha1.ExecutionForLevel(job.Spec.Level, job.Spec.Execution),
			Tolerances: job.Spec.Tolerances,
			Attempt:    int32(attempt),
		},
	}
}

// CreateWriters is how many runs one reconcile creates at once. Creating an
// EachGPU job's thousands of runs one after the other took a round trip each
// (docs/benchmarks.md, "Controller at scale"); a bounded pool keeps the API
// server busy without flooding it.
const CreateWriters = 16

// createRuns creates runs owned by job, CreateWriters at a time, bound where
// the binder can bind them at once, and returns them as created (or read
// back), in order. On error it returns the first one; the runs created
// meanwhile are found by the next reconcile.
func (r *Reconciler) createRuns(ctx context.Context, job *kquantv1alpha1.QuantJob, runs []*kquantv1alpha1.QuantRun) ([]kquantv1alpha1.QuantRun, error) {
	settle := func(*kquantv1alpha1.QuantRun, bool) {}
	if r.binder != nil {
		settle = r.binder.BindAtCreation(ctx, runs)
	}
	out := make([]kquantv1alpha1.QuantRun, len(runs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(CreateWriters)
	for i, run := range runs {
		g.Go(func() error {
			created, fresh, err := r.createRun(gctx, job, run)
			settle(run, fresh)
			if err != nil {
				return err
			}
			out[i] = *created
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// createRun creates run owned by job, in one request: no status write, the
// CRD defaults status.phase to Pending. A run that already exists (a stale
// cache made this reconcile think otherwise) is read back into a new object,
// and fresh is false.
func (r *Reconciler) createRun(ctx context.Context, job *kquantv1alpha1.QuantJob, run *kquantv1alpha1.QuantRun) (_ *kquantv1alpha1.QuantRun, fresh bool, _ error) {
	// Controller reference with blockOwnerDeletion: foreground deletion of the job
	// waits for its runs, and the garbage collector removes them with it.
	if err := controllerutil.SetControllerReference(job, run, r.client.Scheme()); err != nil {
		return nil, false, fmt.Errorf("owning run %s: %w", run.Name, err)
	}
	if err := r.client.Create(ctx, run); apierrors.IsAlreadyExists(err) {
		existing := &kquantv1alpha1.QuantRun{}
		if err := r.client.Get(ctx, client.ObjectKeyFromObject(run), existing); err != nil {
			return nil, false, fmt.Errorf("reading existing run %s: %w", run.Name, err)
		}
		return existing, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("creating run %s: %w", run.Name, err)
	}
	r.creations.created(client.ObjectKeyFromObject(job), run.Name, r.clock.Now())
	return run, true, nil
}
