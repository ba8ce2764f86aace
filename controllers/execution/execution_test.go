// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package execution_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers"
	"github.com/kquant/kquant/controllers/execution"
	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
	"github.com/kquant/kquant/test/wait"
)

const timeout = 20 * time.Second

var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.RunPackage(m, func(e *testenv.Env) { env = e })
}

const image = "registry.local/kquant-agent:v0.4.0"

// start starts a manager whose cache sees namespace ns only, with the
// execution controller configured for allocation, and stops it at cleanup.
// It returns the controller.
func start(t *testing.T, ns string, allocation runpod.Allocation) *execution.Reconciler {
	t.Helper()
	cacheOpts := controllers.CacheOptions("kquant-system")
	cacheOpts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	mgr, err := ctrl.NewManager(env.Config, manager.Options{
		Scheme:                 env.Scheme,
		Logger:                 testLogger(),
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := execution.New(mgr.GetClient(), mgr.GetEventRecorder("kquant-manager"), clock.RealClock{}, execution.Options{
		RunPod: runpod.Config{Allocation: allocation, Image: image},
	})
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return r
}

// testLogger logs to stderr when KQUANT_TEST_LOG is set.
func testLogger() logr.Logger {
	if os.Getenv("KQUANT_TEST_LOG") == "" {
		return logr.Discard()
	}
	return funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 2})
}

func namespace(t *testing.T) string {
	t.Helper()
	ns, err := env.CreateNamespace(t.Context(), "exec")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// boundRun creates a run bound to GPU index of node, as the binder leaves it.
func boundRun(t *testing.T, ns, name string, index int) *kquantv1alpha1.QuantRun {
	t.Helper()
	run := builders.MakeQuantRun(name, ns, "job").Bound("gpu-node-1", index).Obj()
	run.Status = kquantv1alpha1.QuantRunStatus{}
	if err := env.Client.Create(t.Context(), run); err != nil {
		t.Fatalf("creating run: %v", err)
	}
	return run
}

func runPod(t *testing.T, run *kquantv1alpha1.QuantRun) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	wait.For(t, timeout, "run pod of "+run.Name, func() error {
		return env.Client.Get(t.Context(), client.ObjectKey{Namespace: run.Namespace, Name: runpod.PodName(run)}, pod)
	})
	return pod
}

// runStatus waits until run's status satisfies ok.
func runStatus(t *testing.T, run *kquantv1alpha1.QuantRun, what string, ok func(*kquantv1alpha1.QuantRunStatus) bool) *kquantv1alpha1.QuantRun {
	t.Helper()
	got := &kquantv1alpha1.QuantRun{}
	wait.For(t, timeout, "run "+run.Name+" "+what, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(run), got); err != nil {
			return err
		}
		if !ok(&got.Status) {
			return fmt.Errorf("phase %q reason %q message %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
		}
		return nil
	})
	return got
}

func setPodStatus(t *testing.T, pod *corev1.Pod, status corev1.PodStatus) {
	t.Helper()
	fresh := &corev1.Pod{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), fresh); err != nil {
		t.Fatal(err)
	}
	fresh.Status = status
	if err := env.Client.Status().Update(t.Context(), fresh); err != nil {
		t.Fatalf("updating pod status: %v", err)
	}
}

// TestDevicePluginRunPod follows one run through its run pod: what the
// controller creates (the pod and, once per namespace, the run
// ServiceAccount, its RoleBinding and the PriorityClass), and how the pod's
// state shows on the run: waiting for a GPU, running, failing with GPUInUse.
func TestDevicePluginRunPod(t *testing.T) {
	ns := namespace(t)
	start(t, ns, runpod.AllocationDevicePlugin)
	run := builders.MakeQuantRun("mxfp8-0-0", ns, "job").Bound("gpu-node-1", 0).Obj()
	run.Labels[runpod.LabelKueueQueue] = "benchmarks"
	run.Status = kquantv1alpha1.QuantRunStatus{}
	if err := env.Client.Create(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	pod := runPod(t, run)

	if !metav1.IsControlledBy(pod, run) {
		t.Errorf("run pod owners %+v, want the run %s as controller", pod.OwnerReferences, run.UID)
	}
	// The run records its pod, whose token alone may then write its status.
	runStatus(t, run, "recording its run pod", func(s *kquantv1alpha1.QuantRunStatus) bool {
		return s.RunPod != nil && *s.RunPod == kquantv1alpha1.RunPodReference{Name: pod.Name, UID: pod.UID}
	})
	ctr := pod.Spec.Containers[0]
	if q := ctr.Resources.Limits[corev1.ResourceName("nvidia.com/gpu")]; q.String() != "1" {
		t.Errorf("run pod limits %v, want nvidia.com/gpu: 1", ctr.Resources.Limits)
	}
	if pod.Spec.NodeName != "" || pod.Spec.ServiceAccountName != execution.DefaultServiceAccountName ||
		pod.Spec.PriorityClassName != runpod.DefaultPriorityClassName || pod.Spec.Priority == nil || *pod.Spec.Priority != runpod.PriorityValue ||
		ctr.Image != image || pod.Labels[runpod.LabelKueueQueue] != "benchmarks" {
		t.Errorf("run pod nodeName %q serviceAccount %q priorityClass %q priority %v image %q labels %v",
			pod.Spec.NodeName, pod.Spec.ServiceAccountName, pod.Spec.PriorityClassName, pod.Spec.Priority, ctr.Image, pod.Labels)
	}
	sa, rb, pc := &corev1.ServiceAccount{}, &rbacv1.RoleBinding{}, &schedulingv1.PriorityClass{}
	key := client.ObjectKey{Namespace: ns, Name: execution.DefaultServiceAccountName}
	if err := errors.Join(env.Client.Get(t.Context(), key, sa), env.Client.Get(t.Context(), key, rb),
		env.Client.Get(t.Context(), client.ObjectKey{Name: runpod.DefaultPriorityClassName}, pc)); err != nil {
		t.Fatalf("the run pod's ServiceAccount, RoleBinding or PriorityClass: %v", err)
	}
	if rb.RoleRef.Name != execution.DefaultRunClusterRole || len(rb.Subjects) != 1 || rb.Subjects[0].Name != sa.Name {
		t.Errorf("RoleBinding %+v, want ClusterRole %s for ServiceAccount %s", rb, execution.DefaultRunClusterRole, sa.Name)
	}
	if pc.Value != runpod.PriorityValue || pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("PriorityClass value %d preemption %v", pc.Value, pc.PreemptionPolicy)
	}

	// No GPU free on the node: the scheduler leaves the pod Pending.
	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: not eligible due to preemptionPolicy=Never.",
	}}})
	runStatus(t, run, "waiting for a GPU", func(s *kquantv1alpha1.QuantRunStatus) bool {
		return s.Phase == kquantv1alpha1.RunPhasePending && s.Reason == kquantv1alpha1.RunReasonWaitingForGPU &&
			strings.Contains(s.Message, "Insufficient nvidia.com/gpu")
	})
	// A GPU frees up: the pod runs, the wait is over.
	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}})
	runStatus(t, run, "no longer waiting", func(s *kquantv1alpha1.QuantRunStatus) bool { return s.Reason == "" })
	// The run pod's guard finds another process on its GPU.
	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: runpod.ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 3, Reason: "Error", Message: "GPUInUse: GPU GPU-gpu-node-1-0 is used by other processes: 4242 (compute, 40960 MiB)"}},
	}}})
	got := runStatus(t, run, "failed with GPUInUse", func(s *kquantv1alpha1.QuantRunStatus) bool {
		return s.Phase == kquantv1alpha1.RunPhaseFailed && s.Reason == kquantv1alpha1.RunReasonGPUInUse
	})
	if got.Status.CompletionTime == nil || !strings.Contains(got.Status.Message, "4242") {
		t.Errorf("failed run completionTime %v message %q", got.Status.CompletionTime, got.Status.Message)
	}
}

// TestLostRunPodFailsTheRun: a run pod deleted (preempted, evicted, by hand)
// before its run finished fails the run as RunPodLost, which the job
// controller retries; it is not silently created again.
func TestLostRunPodFailsTheRun(t *testing.T) {
	ns := namespace(t)
	start(t, ns, runpod.AllocationDevicePlugin)
	run := boundRun(t, ns, "lost-0-0", 1)
	pod := runPod(t, run)
	if err := env.Client.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	runStatus(t, run, "failed with RunPodLost", func(s *kquantv1alpha1.QuantRunStatus) bool {
		return s.Phase == kquantv1alpha1.RunPhaseFailed && s.Reason == kquantv1alpha1.RunReasonRunPodLost
	})
	time.Sleep(500 * time.Millisecond)
	err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), &corev1.Pod{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the lost run pod came back for a failed run (get: %v)", err)
	}
}

// TestDeletedRunIsForgotten: a run deleted outright, before its run pod
// finished, leaves nothing behind in the controller's memory of run pods (a
// long-lived manager sees many such runs).
func TestDeletedRunIsForgotten(t *testing.T) {
	ns := namespace(t)
	r := start(t, ns, runpod.AllocationDevicePlugin)
	run := boundRun(t, ns, "deleted-0-0", 2)
	pod := runPod(t, run)
	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodRunning})
	wait.For(t, timeout, "the controller to remember the run pod", func() error {
		if n := r.Remembered(); n != 1 {
			return fmt.Errorf("remembers %d runs", n)
		}
		return nil
	})
	if err := env.Client.Delete(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	wait.For(t, timeout, "the controller to forget the deleted run", func() error {
		if n := r.Remembered(); n != 0 {
			return fmt.Errorf("still remembers %d runs", n)
		}
		return nil
	})
}

// TestDRARunPodAndClaim: in DRA mode the run gets a ResourceClaim pinning its
// GPU, owned by the run, and its pod refers to it; when the run is failed
// from outside (its job failed), the pod and the claim are deleted, freeing
// the GPU.
func TestDRARunPodAndClaim(t *testing.T) {
	ns := namespace(t)
	start(t, ns, runpod.AllocationDRA)
	run := boundRun(t, ns, "dra-0-0", 2)
	pod := runPod(t, run)
	claim := &resourcev1.ResourceClaim{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: runpod.ClaimName(run)}, claim); err != nil {
		t.Fatalf("run's ResourceClaim: %v", err)
	}
	if !metav1.IsControlledBy(claim, run) {
		t.Errorf("claim owners %+v, want the run", claim.OwnerReferences)
	}
	sel := claim.Spec.Devices.Requests[0].Exactly.Selectors[0].CEL.Expression
	if want := runpod.UUIDSelector(runpod.DefaultUUIDAttributeDomain, builders.GPUUUID("gpu-node-1", 2)); sel != want {
		t.Errorf("claim selector %q, want %q", sel, want)
	}
	if len(pod.Spec.ResourceClaims) != 1 || pod.Spec.ResourceClaims[0].ResourceClaimName == nil || *pod.Spec.ResourceClaims[0].ResourceClaimName != claim.Name {
		t.Errorf("pod resourceClaims %+v, want %s", pod.Spec.ResourceClaims, claim.Name)
	}
	if args := strings.Join(pod.Spec.Containers[0].Args, " "); args != "run --run="+ns+"/dra-0-0 --allocation=DRA" {
		t.Errorf("run pod args %q, want run mode with --allocation=DRA", args)
	}
	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available: 1 cannot allocate all claims.",
	}}})
	runStatus(t, run, "waiting for its pinned GPU", func(s *kquantv1alpha1.QuantRunStatus) bool {
		return s.Reason == kquantv1alpha1.RunReasonWaitingForGPU
	})

	// The job fails (deadline): the controller fails the run.
	fresh := &kquantv1alpha1.QuantRun{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(run), fresh); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(fresh.DeepCopy())
	fresh.Status.Phase, fresh.Status.Reason = kquantv1alpha1.RunPhaseFailed, kquantv1alpha1.ReasonDeadlineExceeded
	if err := env.Client.Status().Patch(t.Context(), fresh, patch); err != nil {
		t.Fatal(err)
	}
	wait.For(t, timeout, "run pod and claim deleted", func() error {
		podErr := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), &corev1.Pod{})
		claimErr := env.Client.Get(t.Context(), client.ObjectKeyFromObject(claim), &resourcev1.ResourceClaim{})
		if !apierrors.IsNotFound(podErr) || !apierrors.IsNotFound(claimErr) {
			return fmt.Errorf("pod: %v, claim: %v", podErr, claimErr)
		}
		return nil
	})
}

// TestRunLeftRunningByTheAgentRestartsInARunPod is the upgrade path: a run
// that an earlier release's agent was executing in-agent (bound, Running, no
// run pod) is not lost: it gets a run pod and is marked RunPodRestarted.
func TestRunLeftRunningByTheAgentRestartsInARunPod(t *testing.T) {
	ns := namespace(t)
	run := boundRun(t, ns, "upgraded-0-0", 3)
	patch := client.MergeFrom(run.DeepCopy())
	run.Status.Phase, run.Status.AgentID = kquantv1alpha1.RunPhaseRunning, "agent-gpu-node-1"
	run.Status.StartTime = &metav1.Time{Time: time.Now().Add(-time.Minute).Truncate(time.Second)}
	if err := env.Client.Status().Patch(t.Context(), run, patch); err != nil {
		t.Fatal(err)
	}
	start(t, ns, runpod.AllocationDevicePlugin) // the new release's manager
	pod := runPod(t, run)
	if !metav1.IsControlledBy(pod, run) {
		t.Errorf("run pod owners %+v, want the run", pod.OwnerReferences)
	}
	got := runStatus(t, run, "marked RunPodRestarted", func(s *kquantv1alpha1.QuantRunStatus) bool {
		return s.Reason == kquantv1alpha1.RunReasonRunPodRestarted
	})
	if got.Status.Phase != kquantv1alpha1.RunPhaseRunning || got.Status.AgentID != "agent-gpu-node-1" {
		t.Errorf("restarted run phase %s agentID %q, want Running and the agent's fields kept", got.Status.Phase, got.Status.AgentID)
	}
	if r := got.Status.RunPod; r == nil || r.Name != pod.Name || r.UID != pod.UID {
		t.Errorf("restarted run records run pod %+v, want %s (%s)", r, pod.Name, pod.UID)
	}
	wait.For(t, timeout, "a RunPodRestarted event", func() error {
		events := &eventsv1.EventList{}
		if err := env.Client.List(t.Context(), events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == run.Name && e.Reason == kquantv1alpha1.RunReasonRunPodRestarted {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})
}

// TestJobRetriesDisruptionsOutsideBackoffLimit runs the whole manager in
// run-pod mode (SetupControllers with DevicePlugin) over one node whose agent
// only publishes its profile and Lease, for a job with backoffLimit 0 and
// disruptionLimit 1:
//   - the first run's pod finds another process on the GPU (GPUInUse, a
//     disruption): the run fails and the job creates the next attempt, with
//     its own run pod, counting a disruption and no failure;
//   - the agent's Lease expires: new placements stop (a second job is
//     Unschedulable) and the running attempt is not failed;
//   - the second attempt's pod is evicted (RunPodLost): a second disruption,
//     over disruptionLimit, fails the job with DisruptionLimitExceeded.
func TestJobRetriesDisruptionsOutsideBackoffLimit(t *testing.T) {
	const leaseNS = "kquant-system"
	ctx := t.Context()
	if err := client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metaName(leaseNS)})); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	// A node of its own, so that -count=N does not meet the runs of an
	// earlier iteration on its GPU.
	node := ns + "-node"
	profile := builders.MakeGPUNodeProfile(node).GPUs(builders.H100, 1).Ready().Obj()
	if err := env.Client.Create(ctx, &kquantv1alpha1.GPUNodeProfile{ObjectMeta: metaName(node)}); err != nil {
		t.Fatal(err)
	}
	stored := &kquantv1alpha1.GPUNodeProfile{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, stored); err != nil {
		t.Fatal(err)
	}
	stored.Status = profile.Status
	if err := env.Client.Status().Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	lease := builders.MakeLease(kquantv1alpha1.AgentLeaseName(node), leaseNS).Holder("agent").Duration(time.Hour).RenewedAt(time.Now()).Obj()
	if err := env.Client.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), stored)
		_ = env.Client.Delete(context.Background(), lease)
	})

	mgr, err := ctrl.NewManager(env.Config, manager.Options{
		Scheme: env.Scheme, Cache: controllers.CacheOptions(leaseNS),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.SetupControllers(ctx, mgr, controllers.Options{LeaseNamespace: leaseNS, Registerer: prometheus.NewRegistry(),
		Execution: execution.Options{RunPod: runpod.Config{Allocation: runpod.AllocationDevicePlugin, Image: image}}}); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() { cancel(); <-done })

	for _, obj := range []client.Object{builders.MakeQuantRecipe("fp8", ns).Obj(), builders.MakeQuantJob("retry", ns).Recipe("fp8").AnyGPU().BackoffLimit(0).DisruptionLimit(1).Obj()} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	first := &kquantv1alpha1.QuantRun{ObjectMeta: metaName("retry-0-0")}
	first.Namespace = ns
	pod := runPod(t, first)
	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: runpod.ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 3, Message: "GPUInUse: GPU " + builders.GPUUUID(node, 0) + " is used by other processes: 4242 (compute, 40960 MiB)"}},
	}}})
	runStatus(t, first, "failed with GPUInUse", func(s *kquantv1alpha1.QuantRunStatus) bool {
		return s.Phase == kquantv1alpha1.RunPhaseFailed && s.Reason == kquantv1alpha1.RunReasonGPUInUse
	})
	second := &kquantv1alpha1.QuantRun{ObjectMeta: metaName("retry-0-1")}
	second.Namespace = ns
	got := &kquantv1alpha1.QuantRun{}
	wait.For(t, timeout, "the job's second attempt", func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(second), got)
	})
	if p := runPod(t, second); !metav1.IsControlledBy(p, got) {
		t.Errorf("second attempt's pod %s owners %+v, want run %s", p.Name, p.OwnerReferences, got.UID)
	}
	wait.For(t, timeout, "job counts a disruption, not a failure", func() error {
		job := &kquantv1alpha1.QuantJob{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "retry"}, job); err != nil {
			return err
		}
		if job.Status.Failed != 0 || job.Status.Disruptions != 1 || job.Status.Phase == kquantv1alpha1.JobPhaseFailed {
			return fmt.Errorf("job phase %s failed %d disruptions %d", job.Status.Phase, job.Status.Failed, job.Status.Disruptions)
		}
		return nil
	})

	// The second attempt's pod runs; then the agent goes away: its Lease
	// lapses.
	setPodStatus(t, runPod(t, second), corev1.PodStatus{Phase: corev1.PodRunning})
	expired := &coordinationv1.Lease{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(lease), expired); err != nil {
		t.Fatal(err)
	}
	expired.Spec.LeaseDurationSeconds = new(int32(1))
	expired.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-time.Hour)}
	if err := env.Client.Update(ctx, expired); err != nil {
		t.Fatal(err)
	}
	// A second job that only this node's GPU could take (the selector keeps
	// the other tests' nodes out) is told why it cannot: the agent's absence
	// stops new placements.
	later := builders.MakeQuantJob("later", ns).Recipe("fp8").AnyGPU().NodeSelector(map[string]string{"kquant.dev/test-namespace": ns}).Obj()
	if err := env.Client.Create(ctx, later); err != nil {
		t.Fatal(err)
	}
	wait.For(t, timeout, "a new job kept off the node of the absent agent", func() error {
		job := &kquantv1alpha1.QuantJob{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(later), job); err != nil {
			return err
		}
		c := meta.FindStatusCondition(job.Status.Conditions, kquantv1alpha1.JobConditionScheduled)
		if job.Status.Phase != kquantv1alpha1.JobPhaseUnschedulable || c == nil || !strings.Contains(c.Message, "no fresh agent Lease") {
			return fmt.Errorf("job phase %q condition %+v", job.Status.Phase, c)
		}
		return nil
	})
	// The manager has seen the expired Lease; the running attempt stays.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(second), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase.IsTerminal() {
		t.Errorf("run %s after its agent's Lease expired: %s/%s %q, want it still active", got.Name, got.Status.Phase, got.Status.Reason, got.Status.Message)
	}

	setPodStatus(t, runPod(t, second), corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."})
	runStatus(t, second, "failed with RunPodLost", func(s *kquantv1alpha1.QuantRunStatus) bool {
		return s.Phase == kquantv1alpha1.RunPhaseFailed && s.Reason == kquantv1alpha1.RunReasonRunPodLost
	})
	wait.For(t, timeout, "job fails past disruptionLimit", func() error {
		job := &kquantv1alpha1.QuantJob{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "retry"}, job); err != nil {
			return err
		}
		c := meta.FindStatusCondition(job.Status.Conditions, kquantv1alpha1.JobConditionFailed)
		if job.Status.Phase != kquantv1alpha1.JobPhaseFailed || c == nil || c.Reason != kquantv1alpha1.ReasonDisruptionLimitExceeded ||
			job.Status.Failed != 0 || job.Status.Disruptions != 2 {
			return fmt.Errorf("job phase %s failed %d disruptions %d condition %+v", job.Status.Phase, job.Status.Failed, job.Status.Disruptions, c)
		}
		return nil
	})
}

func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
