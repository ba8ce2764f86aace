// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package execution

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/conflict"
	"github.com/kquant/kquant/controllers/internal/expectations"
	"github.com/kquant/kquant/controllers/internal/memo"
	"github.com/kquant/kquant/controllers/internal/runstatus"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/internal/logging"
)

// ControllerName is the controller's stable name.
const ControllerName = "execution"

// Defaults of Options.
const (
	// DefaultServiceAccountName is the run pods' ServiceAccount in every
	// namespace that has runs; the admission policy matches this name.
	DefaultServiceAccountName = "kquant-run"
	// DefaultRunClusterRole is the ClusterRole that the run ServiceAccount is
	// bound to in its namespace: get QuantRuns, patch their status.
	DefaultRunClusterRole = "kquant-run"
)

// EventReasonRecordedFromRunPod is the event a run gets when the manager
// recorded its end from its run pod's termination message, the pod's own
// status write having never landed: the result is kept, and the event says
// the API server was unreachable from the pod for as long as it retried.
const EventReasonRecordedFromRunPod = "RecordedFromRunPod"

// creationWait is how often a run pod this process created and the cache
// does not show yet is looked for again, and expectationTTL how long it is
// expected before it is created again.
const (
	creationWait   = 2 * time.Second
	expectationTTL = 30 * time.Second
	// podExitGrace is how long a run pod may keep running after its run
	// finished before it is deleted: a run pod writes its run's last status
	// and only then exits, so for a moment its run is finished and the pod
	// still Running. A pod still running after that was failed from outside
	// (its job failed, a deadline, its node lost), or hangs.
	podExitGrace = 15 * time.Second
)

// Options configure the controller.
type Options struct {
	// RunPod is what the chart decides about run pods; Allocation must be
	// DevicePlugin or DRA.
	RunPod runpod.Config
	// RunClusterRole is bound to the run ServiceAccount in each namespace.
	RunClusterRole string
}

// Reconciler gives bound runs their run pods.
type Reconciler struct {
	client client.Client
	// reader reads from the API server itself, past the cache.
	reader   client.Reader
	recorder events.EventRecorder
	clock    clock.PassiveClock
	opts     Options

	// seen are the runs whose run pod this process has seen in its cache: a
	// pod seen and then missing is lost. Keyed by the run's name, so that a
	// run deleted outright (its reconcile knows only the name) is
	// forgotten, with its UID, so that a run re-created under the same name
	// starts afresh.
	seen memo.Map[types.NamespacedName, types.UID]
	// created are the run pods this process created and the cache has not
	// shown yet, per run, by the run's UID: missing from the cache, such a
	// pod is not lost.
	created *expectations.Store[types.NamespacedName]
	// ready are the namespaces whose ServiceAccount and RoleBinding exist.
	ready memo.Map[string, bool]
	// priorityClasses are the PriorityClasses known to exist, by name: the
	// run pods' and, once an idle validation runs, the idle one.
	priorityClasses memo.Map[string, bool]
}

// New returns a Reconciler.
func New(c client.Client, recorder events.EventRecorder, clk clock.PassiveClock, opts Options) *Reconciler {
	if opts.RunPod.ServiceAccountName == "" {
		opts.RunPod.ServiceAccountName = DefaultServiceAccountName
	}
	if opts.RunClusterRole == "" {
		opts.RunClusterRole = DefaultRunClusterRole
	}
	return &Reconciler{client: c, reader: c, recorder: recorder, clock: clk, opts: opts,
		created: &expectations.Store[types.NamespacedName]{TTL: expectationTTL}}
}

// +kubebuilder:rbac:groups=kquant.dev,resources=quantruns,verbs=get;list;watch
// +kubebuilder:rbac:groups=kquant.dev,resources=quantruns/status,verbs=get;patch
// Run pods and claims name their run as controller with blockOwnerDeletion,
// which the OwnerReferencesPermissionEnforcement admission plugin allows only
// to who may update the run's finalizers.
// +kubebuilder:rbac:groups=kquant.dev,resources=quantruns/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=create
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=create
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile drives one run's run pod; lost write races are retried quietly.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return conflict.Result(r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	run := &kquantv1alpha1.QuantRun{}
	if err := r.client.Get(ctx, req.NamespacedName, run); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !quantrun.IsBound(run) || run.DeletionTimestamp != nil {
		r.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if run.Status.Phase.IsTerminal() {
		r.forget(req.NamespacedName)
		return r.release(ctx, run)
	}
	pod := &corev1.Pod{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: runpod.PodName(run)}, pod)
	switch {
	case apierrors.IsNotFound(err):
		// Expected first: this process records the pod right after creating
		// it, so the cache may show the run's status.runPod before the pod.
		if r.expected(run) {
			// Created by this process and not in the cache: either the cache
			// is behind, or the pod came and went before it looked. The API
			// server tells which.
			live := &corev1.Pod{}
			err := r.reader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: runpod.PodName(run)}, live)
			switch {
			case apierrors.IsNotFound(err):
				return reconcile.Result{}, r.applyOutcome(ctx, run, runpod.PodOutcome(run, nil))
			case err != nil:
				return reconcile.Result{}, fmt.Errorf("reading run pod of %s: %w", run.Name, err)
			}
			return reconcile.Result{RequeueAfter: creationWait}, nil
		}
		if r.hadRunPod(run) {
			return reconcile.Result{}, r.applyOutcome(ctx, run, runpod.PodOutcome(run, nil))
		}
		return r.start(ctx, run)
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("getting run pod of %s: %w", run.Name, err)
	case !r.isRunPod(pod, run):
		// A pod of the same name that is not this run's: an earlier run of the
		// same name (a re-created job) whose pod the garbage collector has
		// not removed yet, or a pod someone else made to look like it. Remove
		// it; its deletion brings this run back.
		return reconcile.Result{}, r.deleteStale(ctx, pod)
	}
	r.markSeen(run)
	if run.Status.RunPod == nil {
		// Created by a process that stopped before recording it, or by a
		// release that did not record run pods: the pod cannot write the
		// run's status until it is recorded.
		if err := r.recordRunPod(ctx, run, pod, runstatus.Change{
			Phase: quantrun.StoredPhase(run), Reason: run.Status.Reason, Message: run.Status.Message,
		}); err != nil {
			return reconcile.Result{}, err
		}
	}
	left, limited := timeLeft(run, pod, r.clock.Now())
	if limited && left <= 0 {
		return reconcile.Result{}, r.timeOut(ctx, run, pod)
	}
	// The pod's own changes reconcile the run; its time limit does not.
	return reconcile.Result{RequeueAfter: left}, r.applyOutcome(ctx, run, runpod.PodOutcome(run, pod))
}

// isRunPod reports whether pod is the run pod of run: controlled by the run,
// running as the run ServiceAccount (which only the manager may give a pod),
// and the pod the run recorded, once it recorded one.
func (r *Reconciler) isRunPod(pod *corev1.Pod, run *kquantv1alpha1.QuantRun) bool {
	return metav1.IsControlledBy(pod, run) && pod.Spec.ServiceAccountName == r.opts.RunPod.ServiceAccountName &&
		(run.Status.RunPod == nil || run.Status.RunPod.UID == pod.UID)
}

// recordRunPod writes change with status.runPod naming pod: from then on a
// token bound to that pod, and only such a token, may write the run's status
// as its run pod (the run-pod admission policy compares the token's pod-uid
// claim with it).
func (r *Reconciler) recordRunPod(ctx context.Context, run *kquantv1alpha1.QuantRun, pod *corev1.Pod, change runstatus.Change) error {
	change.RunPod = &kquantv1alpha1.RunPodReference{Name: pod.Name, UID: pod.UID}
	if err := runstatus.Apply(ctx, r.client, run, change); err != nil {
		return fmt.Errorf("recording run pod %s of %s: %w", pod.Name, run.Name, err)
	}
	return nil
}

// hadRunPod reports whether run had a run pod that is now gone: this process
// saw it, or the run's status records one or says a run pod executed it.
func (r *Reconciler) hadRunPod(run *kquantv1alpha1.QuantRun) bool {
	uid, seen := r.seen.Get(client.ObjectKeyFromObject(run))
	return seen && uid == run.UID || run.Status.RunPod != nil || run.Status.AllocatedGPU != nil && run.Status.AllocatedGPU.Source != ""
}

func (r *Reconciler) markSeen(run *kquantv1alpha1.QuantRun) {
	key := client.ObjectKeyFromObject(run)
	r.seen.Put(key, run.UID)
	r.created.Observed(key, string(run.UID))
}

// expected reports whether this process created run's run pod within
// expectationTTL and the cache has not shown it yet.
func (r *Reconciler) expected(run *kquantv1alpha1.QuantRun) bool {
	return r.created.Expecting(client.ObjectKeyFromObject(run), string(run.UID), r.clock.Now())
}

// forget drops what this process remembers of the run named key.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.seen.Delete(key)
	r.created.Forget(key)
}

// start creates what the run pod needs and the run pod. A run that already
// runs without one was started by an earlier release's agent (or its pod was
// lost unwatched): it is marked RunPodRestarted and starts over in the pod.
func (r *Reconciler) start(ctx context.Context, run *kquantv1alpha1.QuantRun) (reconcile.Result, error) {
	cfg := r.opts.RunPod
	if q := run.Labels[runpod.LabelKueueQueue]; q != "" {
		// The job named a Kueue LocalQueue (its label, copied to its runs).
		cfg.KueueQueueName = q
	}
	objs, err := runpod.Build(run, runpod.GPU{UUID: run.Spec.GPUUUID, MIGProfile: run.Spec.MIGProfile}, cfg)
	if err != nil {
		r.recorder.Eventf(run, nil, corev1.EventTypeWarning, "RunPodInvalid", "CreateRunPod", "cannot build the run pod: %v", err)
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("building run pod of %s: %w", run.Name, err))
	}
	if err := r.ensurePriorityClass(ctx, runpod.PriorityClassFor(run, cfg)); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.ensureNamespace(ctx, run.Namespace); err != nil {
		return reconcile.Result{}, err
	}
	if objs.Claim != nil {
		if err := r.createClaim(ctx, objs.Claim); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.client.Create(ctx, objs.Pod); apierrors.IsAlreadyExists(err) {
		// The cache is behind this process's own creation: wait for it.
		return reconcile.Result{RequeueAfter: creationWait}, nil
	} else if err != nil {
		// A missing ServiceAccount is created again next time.
		r.ready.Delete(run.Namespace)
		return reconcile.Result{}, fmt.Errorf("creating run pod of %s: %w", run.Name, err)
	}
	r.created.Expect(client.ObjectKeyFromObject(run), string(run.UID), r.clock.Now())
	log := logging.FromContext(ctx)
	log.V(logging.Debug).Info("Run pod created", "quantRun", client.ObjectKeyFromObject(run), "node", run.Spec.NodeName, "gpu", run.Spec.GPUUUID)
	// Recorded at once, in the same write as RunPodRestarted: the pod waits
	// for it before it writes anything. A failed write is made again once
	// the cache shows the pod (reconcile).
	change := runstatus.Change{Phase: quantrun.StoredPhase(run), Reason: run.Status.Reason, Message: run.Status.Message}
	restarted := run.Status.Phase == kquantv1alpha1.RunPhaseRunning
	if restarted {
		change.Reason = kquantv1alpha1.RunReasonRunPodRestarted
		change.Message = fmt.Sprintf("run was running without a run pod (agent %q); a new run pod starts it over", run.Status.AgentID)
	}
	agentID := run.Status.AgentID
	if err := r.recordRunPod(ctx, run.DeepCopy(), objs.Pod, change); err != nil {
		return reconcile.Result{}, err
	}
	if restarted {
		log.Info("Run restarted in a run pod", "quantRun", client.ObjectKeyFromObject(run), "agentID", agentID)
		r.recorder.Eventf(run, objs.Pod, corev1.EventTypeNormal, kquantv1alpha1.RunReasonRunPodRestarted, "CreateRunPod",
			"run was running without a run pod (agent %q); run pod %s starts it over", agentID, objs.Pod.Name)
		return reconcile.Result{}, nil
	}
	r.recorder.Eventf(run, objs.Pod, corev1.EventTypeNormal, "RunPodCreated", "CreateRunPod", "created run pod %s for GPU %s on node %s",
		objs.Pod.Name, run.Spec.GPUUUID, run.Spec.NodeName)
	return reconcile.Result{}, nil
}

// applyOutcome writes what the run pod's state means for the run, when it
// differs from what the run says. A waiting reason that no longer holds is
// cleared.
func (r *Reconciler) applyOutcome(ctx context.Context, run *kquantv1alpha1.QuantRun, out runpod.Outcome) error {
	stored := quantrun.Phase(run) == kquantv1alpha1.RunPhaseBound
	switch {
	case out.IsZero() && isWaitingReason(run.Status.Reason):
		// The pod got past what it waited for: drop the waiting reason.
		return runstatus.Apply(ctx, r.client, run.DeepCopy(), runstatus.Change{Phase: quantrun.StoredPhase(run)})
	case out.IsZero():
		return nil
	case out.Phase == kquantv1alpha1.RunPhasePending:
		// Only a run the pod has not started may wait (a stale pod view must
		// not move a running run back).
		if !stored || (run.Status.Reason == out.Reason && run.Status.Message == out.Message) {
			return nil
		}
		if run.Status.Reason != out.Reason {
			r.recorder.Eventf(run, nil, corev1.EventTypeNormal, out.Reason, "WaitForRunPod", "%s", out.Message)
		}
		return runstatus.Apply(ctx, r.client, run.DeepCopy(), runstatus.Change{
			Phase: kquantv1alpha1.RunPhasePending, Reason: out.Reason, Message: out.Message})
	}
	change := runstatus.Change{Phase: out.Phase, Reason: out.Reason, Message: out.Message,
		CompletionTime: out.CompletionTime, Results: out.Results}
	if change.CompletionTime == nil {
		now := metav1.NewTime(r.clock.Now())
		change.CompletionTime = &now
	}
	// The run's resourceVersion conditions the write: if the run pod wrote a
	// result the cache has not shown yet, this conflicts and is decided again
	// (and finds the run finished: nothing to write). So a run pod's own
	// outcome (FromPod) is recorded here only when its write never landed.
	if err := runstatus.Apply(ctx, r.client, run.DeepCopy(), change); err != nil {
		return err
	}
	// What this process saw of the run pod is forgotten only once the cache
	// shows the run finished (reconcile): until then a reconcile of the
	// cached, still running run must find it had a pod, or it would create
	// the lost pod again.
	log := logging.FromContext(ctx).WithValues("quantRun", client.ObjectKeyFromObject(run), "reason", out.Reason, "disruption", kquantv1alpha1.IsRunDisruption(out.Reason))
	if out.FromPod {
		r.recorder.Eventf(run, nil, corev1.EventTypeWarning, EventReasonRecordedFromRunPod, "RecordRun", "%s", out.Message)
		log.Info("Run's end recorded from its run pod's termination message", "phase", out.Phase, "results", out.Results != nil)
		return nil
	}
	r.recorder.Eventf(run, nil, corev1.EventTypeWarning, out.Reason, "FailRun", "%s", out.Message)
	log.Info("Run failed in its run pod")
	return nil
}

// isWaitingReason reports whether reason is one of a Pending run's waiting
// reasons, which this controller sets and clears.
func isWaitingReason(reason string) bool {
	switch reason {
	case kquantv1alpha1.RunReasonWaitingForGPU, kquantv1alpha1.RunReasonRunPodUnschedulable, kquantv1alpha1.RunReasonRunPodWaiting:
		return true
	}
	return false
}

// ensurePriorityClass creates a run pod's PriorityClass unless it exists
// (the chart may ship it); an existing one of a higher value or another
// preemption policy is reported, not changed: PriorityClasses are immutable.
func (r *Reconciler) ensurePriorityClass(ctx context.Context, want *schedulingv1.PriorityClass) error {
	if ok, _ := r.priorityClasses.Get(want.Name); ok {
		return nil
	}
	err := r.client.Create(ctx, want)
	if apierrors.IsAlreadyExists(err) {
		got := want.DeepCopy()
		// One read past the cache: a cached Get would start an informer of
		// every PriorityClass for a check made once.
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
			return fmt.Errorf("getting PriorityClass %s: %w", want.Name, err)
		}
		if got.Value > want.Value || got.PreemptionPolicy == nil || *got.PreemptionPolicy != corev1.PreemptNever {
			logging.FromContext(ctx).Info("Run pods' PriorityClass is not low and non-preempting; run pods may preempt other pods",
				"priorityClass", got.Name, "value", got.Value)
		}
	} else if err != nil {
		return fmt.Errorf("creating PriorityClass %s: %w", want.Name, err)
	}
	r.priorityClasses.Put(want.Name, true)
	return nil
}

// ensureNamespace creates the run ServiceAccount of ns and binds it to the
// run ClusterRole, once per process and namespace.
func (r *Reconciler) ensureNamespace(ctx context.Context, ns string) error {
	if done, _ := r.ready.Get(ns); done {
		return nil
	}
	sa := r.opts.RunPod.ServiceAccountName
	labels := map[string]string{"app.kubernetes.io/name": "kquant", runpod.LabelComponent: runpod.ComponentRun}
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns, Labels: labels}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.opts.RunClusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
		},
	}
	for _, obj := range objs {
		if err := r.client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s/%s for run pods: %w", obj, ns, sa, err)
		}
	}
	r.ready.Put(ns, true)
	return nil
}

func (r *Reconciler) createClaim(ctx context.Context, claim *resourcev1.ResourceClaim) error {
	if err := r.client.Create(ctx, claim); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ResourceClaim %s: %w", claim.Name, err)
	}
	return nil
}

// release frees the GPU of a finished run: a run pod still pending or
// running podExitGrace after its run finished (the run was failed from
// outside: its job failed, a deadline, its node was lost) is deleted, and so
// is the run's DRA claim. A pod that exited stays for its logs until the run
// is deleted.
func (r *Reconciler) release(ctx context.Context, run *kquantv1alpha1.QuantRun) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	err := r.client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: runpod.PodName(run)}, pod)
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("getting run pod of %s: %w", run.Name, err)
	}
	if err == nil && metav1.IsControlledBy(pod, run) && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		if c := run.Status.CompletionTime; c != nil {
			if left := podExitGrace - r.clock.Since(c.Time); left > 0 {
				// The pod's exit, when it comes, reconciles the run again.
				return reconcile.Result{RequeueAfter: left}, nil
			}
		}
		if pod.DeletionTimestamp == nil {
			if err := r.deleteStale(ctx, pod); err != nil {
				return reconcile.Result{}, err
			}
			r.recorder.Eventf(run, pod, corev1.EventTypeNormal, "RunPodDeleted", "ReleaseGPU", "run %s finished (%s) and its run pod still ran; deleted it", run.Status.Phase, run.Status.Reason)
		}
	}
	if r.opts.RunPod.Allocation != runpod.AllocationDRA {
		return reconcile.Result{}, nil
	}
	claim := &resourcev1.ResourceClaim{}
	err = r.client.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: runpod.ClaimName(run)}, claim)
	if err != nil || !metav1.IsControlledBy(claim, run) || claim.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.client.Delete(ctx, claim, client.Preconditions{UID: &claim.UID}); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("deleting ResourceClaim %s: %w", claim.Name, err)
	}
	return reconcile.Result{}, nil
}

func (r *Reconciler) deleteStale(ctx context.Context, pod *corev1.Pod) error {
	if pod.DeletionTimestamp != nil {
		return nil
	}
	err := r.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting stale pod %s: %w", pod.Name, err)
	}
	return nil
}

// SetupWithManager registers the controller: runs, and the pods and claims
// they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.reader = mgr.GetAPIReader()
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&kquantv1alpha1.QuantRun{}).
		Owns(&corev1.Pod{})
	if r.opts.RunPod.Allocation == runpod.AllocationDRA {
		b = b.Owns(&resourcev1.ResourceClaim{})
	}
	return b.Complete(r)
}
