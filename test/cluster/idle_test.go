// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"fmt"
	"math"
	"slices"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/test/builders"
)

// plainStarts is how many plain GPU pods are started, one after the other,
// for the comparison.
const plainStarts = 3

// podPoll is how often the delay measurements look at a pod: far below the
// delays measured.
const podPoll = 20 * time.Millisecond

// idleValidationYields measures what idle validation costs a workload.
// First, plainStarts pods that ask for one free GPU each start, for the
// comparison. Then a QuantGatePolicy validates the node once its GPUs have
// been idle for a minute: its idle job's run pods hold every simulated GPU
// at the lowest priority (they are frozen, SIGSTOP, so that they stay in
// flight however fast the machine runs them). A workload pod that asks for
// one GPU is created; the scheduler preempts one idle run pod (an Event
// Preempted), the victim is thawed as soon as it is marked for deletion (so
// that it handles its SIGTERM, as a live run pod does; its siblings stay
// frozen, spending no CPU, as GPU runs would not), and the workload runs.
// The timeline (victim marked, its container ended and how, workload bound,
// Running) is logged. The victim's run is RunPodLost, a
// disruption; the idle job ends there (disruptionLimit 0) and retries
// nothing. The delays, from Create to Running as the test sees them, are
// logged; nothing is timed as an assertion.
func idleValidationYields(t *testing.T, cl *cluster) {
	ctx := t.Context()
	ns := cl.namespace(t, "e2e-idle")
	var plain []time.Duration
	for i := range plainStarts {
		pod := gpuPod(ns, fmt.Sprintf("plain-%d", i))
		plain = append(plain, cl.startPod(t, pod, nil))
		cl.deletePod(t, pod)
	}

	policy := builders.MakeQuantGatePolicy("e2e-idle", "fp8-current-scaling").Label(false).Condition(true).
		IdleValidation(time.Minute, 10*time.Minute).Obj()
	// Large enough that the runs are still in flight when they are frozen.
	policy.Spec.Validation.Workload.Shapes = []v1alpha1.Shape{{Rows: 8192, Cols: 8192}}
	if err := cl.c.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	defer cl.idleCleanup(t, policy)

	// The policy's own job validates every GPU once; then the GPUs are
	// free, and a minute later the idle job holds them all.
	cl.waitJob(t, systemNamespace, "e2e-idle-1-0", v1alpha1.JobPhaseSucceeded, 6*time.Minute)
	var running []v1alpha1.QuantRun
	eventually(t, 4*time.Minute, fmt.Sprintf("%d idle validation runs Running", simulatedGPUs), func() error {
		running = running[:0]
		for _, r := range cl.runs(t, systemNamespace) {
			if v1alpha1.IsIdleValidation(&r) && r.Status.Phase == v1alpha1.RunPhaseRunning {
				running = append(running, r)
			}
		}
		if len(running) < simulatedGPUs {
			return fmt.Errorf("%d idle validation runs Running", len(running))
		}
		return nil
	})
	frozen := cl.signalRunPods(t, systemNamespace, running, "STOP")
	if len(frozen) != simulatedGPUs {
		t.Fatalf("froze %d idle run pods (%v), want every GPU's", len(frozen), frozen)
	}
	// Their PIDs, read now: the victim is thawed by one system call the
	// moment it is seen marked, so that the test's own crictl calls add
	// nothing to the delay it measures.
	pids := map[string]int{}
	for _, name := range frozen {
		if pids[name] = cl.runContainerPID(t, systemNamespace, name); pids[name] == 0 {
			t.Fatalf("idle run pod %s has no running container to thaw", name)
		}
	}
	job := running[0].Spec.JobRef.Name
	for _, name := range frozen {
		p := &corev1.Pod{}
		if err := cl.c.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: name}, p); err != nil {
			t.Fatal(err)
		}
		if p.Spec.PriorityClassName != runpod.DefaultIdlePriorityClassName || p.Spec.Priority == nil || *p.Spec.Priority != math.MinInt32 ||
			p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptNever {
			t.Errorf("idle run pod %s: priorityClass %q priority %v preemptionPolicy %v", name, p.Spec.PriorityClassName, p.Spec.Priority, p.Spec.PreemptionPolicy)
		}
	}
	t.Logf("idle validation job %s holds every GPU:\n%s", job, cl.kubectl(t, "get", "pods", "-n", systemNamespace, "-l", v1alpha1.LabelIdleValidation+"=true", "-o", "wide"))

	// The timeline of the preemption, as the test sees it: when the
	// scheduler marked a victim, when the victim's container ended (and how:
	// its own SIGTERM handling, or killed at the end of its grace period),
	// when the workload was bound to the node.
	workload := gpuPod(ns, "workload")
	var victim *corev1.Pod
	var marked, thawed, exited, bound time.Duration
	created := time.Now()
	preempted := cl.startPod(t, workload, func() {
		pods := &corev1.PodList{}
		if err := cl.c.List(ctx, pods, client.InNamespace(systemNamespace), client.MatchingLabels{v1alpha1.LabelIdleValidation: "true"}); err != nil {
			t.Fatal(err)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			switch {
			case victim == nil && p.DeletionTimestamp != nil:
				// Thaw the victim alone, so that it handles its SIGTERM as a
				// live run pod does; its siblings stay frozen and spend no
				// CPU, as GPU runs would not on a real node.
				victim, marked = p, time.Since(created)
				if err := syscall.Kill(pids[p.Name], syscall.SIGCONT); err != nil {
					t.Errorf("thawing the victim %s: %v", p.Name, err)
				}
				thawed = time.Since(created)
			case victim != nil && p.Name == victim.Name:
				victim = p
				if exited == 0 && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
					exited = time.Since(created)
				}
			}
		}
		if victim != nil && exited == 0 && !slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return p.Name == victim.Name }) {
			exited = time.Since(created) // gone between two polls
		}
		w := &corev1.Pod{}
		if err := cl.c.Get(ctx, client.ObjectKeyFromObject(workload), w); err == nil && bound == 0 && w.Spec.NodeName != "" {
			bound = time.Since(created)
		}
	})
	cl.thaw(t, frozen)
	if victim == nil {
		t.Fatalf("the workload started without preempting an idle run pod")
	}
	how := "gone before its status was seen"
	for _, cs := range victim.Status.ContainerStatuses {
		if term := cs.State.Terminated; term != nil {
			how = fmt.Sprintf("exit code %d (%s), ran %s to %s", term.ExitCode, term.Reason, term.StartedAt.Format(time.TimeOnly), term.FinishedAt.Format(time.TimeOnly))
		}
	}
	t.Logf("preemption timeline after the workload's Create: victim %s marked %s, thawed %s, its container ended by %s (%s), workload bound %s, Running %s",
		victim.Name, marked.Round(time.Millisecond), thawed.Round(time.Millisecond), exited.Round(time.Millisecond), how, bound.Round(time.Millisecond), preempted)

	// The victim's run is a disruption; the job ends there (its other runs
	// are failed with the job's reason, freeing their GPUs) and retries
	// nothing.
	done := cl.waitJob(t, systemNamespace, job, v1alpha1.JobPhaseFailed, 5*time.Minute)
	var victims, retries, others []string
	for _, r := range cl.runs(t, systemNamespace) {
		if r.Spec.JobRef.Name != job {
			continue
		}
		if r.Spec.Attempt > 0 {
			retries = append(retries, r.Name)
		}
		switch {
		case r.Status.Reason == v1alpha1.RunReasonRunPodLost && v1alpha1.IsRunDisruption(r.Status.Reason):
			victims = append(victims, r.Name+": "+r.Status.Message)
		case r.Status.Phase == v1alpha1.RunPhaseFailed && r.Status.Reason != v1alpha1.ReasonDisruptionLimitExceeded:
			others = append(others, r.Name+": "+r.Status.Reason)
		}
	}
	if len(victims) == 0 || len(retries) != 0 || len(others) != 0 || done.Status.Disruptions < 1 {
		t.Errorf("job %s: runs lost %v, retries %v, other failures %v, disruptions %d; want a RunPodLost, no retry, no other failure",
			job, victims, retries, others, done.Status.Disruptions)
	}
	if c := meta.FindStatusCondition(done.Status.Conditions, v1alpha1.JobConditionFailed); c == nil || c.Reason != v1alpha1.ReasonDisruptionLimitExceeded {
		t.Errorf("job %s Failed condition %+v, want reason %s", job, c, v1alpha1.ReasonDisruptionLimitExceeded)
	}
	events := &corev1.EventList{}
	if err := cl.c.List(ctx, events, client.InNamespace(systemNamespace)); err != nil {
		t.Fatal(err)
	}
	var preemptions []string
	for _, e := range events.Items {
		if e.Reason == "Preempted" && slices.Contains(frozen, e.InvolvedObject.Name) {
			preemptions = append(preemptions, e.InvolvedObject.Name+": "+e.Message)
		}
	}
	if len(preemptions) == 0 {
		t.Errorf("no Preempted event on an idle run pod %v", frozen)
	}
	t.Logf("preempted: %v; lost runs: %v", preemptions, victims)
	t.Logf("workload delay, Create to Running: plain pod on a free GPU %v; workload preempting an idle validation run %v",
		plain, preempted)
	cl.deletePod(t, workload)
}

// gpuPod is a pause pod that asks for one GPU.
func gpuPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Tolerations:                   []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{
				Name: "work", Image: "kquant.local/pause:3.10", ImagePullPolicy: corev1.PullNever,
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}},
			}},
		},
	}
}

// startPod creates pod and returns how long it took, as the test sees it,
// from Create to the pod Running; meanwhile each poll calls observe, when
// set.
func (cl *cluster) startPod(t *testing.T, pod *corev1.Pod, observe func()) time.Duration {
	t.Helper()
	start := time.Now()
	if err := cl.c.Create(t.Context(), pod); err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	for deadline := start.Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(podPoll) {
		if observe != nil {
			observe()
		}
		p := &corev1.Pod{}
		if err := cl.c.Get(t.Context(), client.ObjectKeyFromObject(pod), p); err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodRunning {
			return time.Since(start).Round(time.Millisecond)
		}
	}
	t.Fatalf("pod %s not Running within 3m:\n%s", pod.Name, cl.kubectl(t, "describe", "pod", "-n", pod.Namespace, pod.Name))
	return 0
}

// deletePod deletes pod at once and waits until it is gone, its GPU free.
func (cl *cluster) deletePod(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if err := cl.c.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "pod "+pod.Name+" gone", func() error {
		err := cl.c.Get(t.Context(), client.ObjectKeyFromObject(pod), &corev1.Pod{})
		if err == nil {
			return fmt.Errorf("pod %s still there", pod.Name)
		}
		return client.IgnoreNotFound(err)
	})
}

// idleCleanup deletes the policy and waits until its idle run pods are gone,
// so that the scenarios after this one find every GPU free.
func (cl *cluster) idleCleanup(t *testing.T, policy *v1alpha1.QuantGatePolicy) {
	if err := cl.c.Delete(t.Context(), policy); client.IgnoreNotFound(err) != nil {
		t.Error(err)
	}
	eventually(t, 3*time.Minute, "idle validation pods gone", func() error {
		pods := &corev1.PodList{}
		if err := cl.c.List(t.Context(), pods, client.InNamespace(systemNamespace), client.MatchingLabels{v1alpha1.LabelIdleValidation: "true"}); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d idle validation pods left", len(pods.Items))
		}
		return nil
	})
}

// thaw sends SIGCONT to the run containers of the named run pods in the
// manager's namespace that still run; unlike signalRunPods, finding none is
// not an error (their job may have deleted them meanwhile).
func (cl *cluster) thaw(t *testing.T, pods []string) {
	t.Helper()
	for _, name := range pods {
		if pid := cl.runContainerPID(t, systemNamespace, name); pid != 0 {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Logf("thawing %s: %v", name, err)
			}
		}
	}
}
