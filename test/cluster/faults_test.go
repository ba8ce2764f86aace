// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/agent/driverupgrade"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

// The fault scenarios of run-pod mode (issue 38 §6). Each starts a job whose
// runs last long enough to be hit mid-run, does one thing to the cluster that
// a production cluster does to its pods, and checks the end: no result lost,
// every run terminal with the right reason, the job's own-failure and
// disruption counts, and nothing orphaned.

// slowIterations makes a run of MakeSlowBenchmark last about 25 s on the
// local cluster's two shared cores, four at a time (about 250 ms an
// iteration): long enough to be hit mid-run, short enough to keep the
// suite's time modest.
const slowIterations = 100

// outage is how long the API server stays away while runs finish.
const outage = 30 * time.Second

// agentAway is how long the agent DaemonSet's new pod stays unready: past
// the agent Lease's expiry (40 s), after which in-agent mode fails the
// node's runs as NodeLost and run-pod mode must not.
const agentAway = 60 * time.Second

// counts are a finished job's run-attempt counts.
type counts struct {
	succeeded, failed, disruptions int32
}

// startSlowJob creates, in a fresh namespace, job "slow" of one slow run per
// whole GPU, with no retry of a run's own failure (backoffLimit 0), and
// waits until want of its runs are Running: their pods recorded the start.
func (cl *cluster) startSlowJob(t *testing.T, ns string, want int) []v1alpha1.QuantRun {
	t.Helper()
	cl.namespace(t, ns)
	cl.apply(t, ns, nil, filepath.Join(testenv.RepoRoot(), "recipes", "fp8-current-scaling.yaml"))
	job := builders.MakeSlowBenchmark("slow", ns, slowIterations).EachGPU().BackoffLimit(0)
	if err := cl.c.Create(t.Context(), job.Obj()); err != nil {
		t.Fatal(err)
	}
	return cl.waitRunning(t, ns, want)
}

// waitRunning waits until at least want runs in ns are Running.
func (cl *cluster) waitRunning(t *testing.T, ns string, want int) []v1alpha1.QuantRun {
	t.Helper()
	var running []v1alpha1.QuantRun
	eventually(t, 3*time.Minute, fmt.Sprintf("%d runs Running", want), func() error {
		running = running[:0]
		for _, r := range cl.runs(t, ns) {
			if r.Status.Phase == v1alpha1.RunPhaseRunning {
				running = append(running, r)
			}
		}
		if len(running) < want {
			return fmt.Errorf("%d runs Running", len(running))
		}
		return nil
	})
	return running
}

// finished waits for job slow in ns to reach phase and checks its counts
// against want and against its runs: every run terminal, each succeeded one
// with its results, each failed one counted as a disruption or as its own
// failure by its reason (v1alpha1.IsRunDisruption). It returns the runs.
func (cl *cluster) finished(t *testing.T, ns string, phase v1alpha1.JobPhase, want counts) []v1alpha1.QuantRun {
	t.Helper()
	job := cl.waitJob(t, ns, "slow", phase, 6*time.Minute)
	got := counts{job.Status.Succeeded, job.Status.Failed, job.Status.Disruptions}
	if got != want {
		t.Errorf("job slow: %d succeeded, %d failed, %d disruptions; want %d, %d, %d",
			got.succeeded, got.failed, got.disruptions, want.succeeded, want.failed, want.disruptions)
	}
	runs := cl.runs(t, ns)
	var fromRuns counts
	for _, r := range runs {
		switch {
		case !r.Status.Phase.IsTerminal():
			t.Errorf("run %s is %s after the job ended", r.Name, r.Status.Phase)
		case r.Status.Phase == v1alpha1.RunPhaseSucceeded:
			fromRuns.succeeded++
			if r.Status.Results == nil {
				t.Errorf("run %s succeeded without results: %s", r.Name, r.Status.Message)
			}
		case v1alpha1.IsRunDisruption(r.Status.Reason):
			fromRuns.disruptions++
		default:
			fromRuns.failed++
		}
	}
	if fromRuns != got {
		t.Errorf("the job counts %+v, its runs say %+v", got, fromRuns)
	}
	t.Logf("job slow %s: %d succeeded, %d failed, %d disruptions\n%s", phase, got.succeeded, got.failed, got.disruptions,
		cl.kubectl(t, "get", "quantruns", "-n", ns, "-o", "custom-columns=RUN:.metadata.name,PHASE:.status.phase,REASON:.status.reason,STARTED:.status.startTime,DONE:.status.completionTime,MESSAGE:.status.message"))
	return runs
}

// nothingOrphaned checks that once the job in ns ended nothing of it holds a
// GPU or outlives its owner: every pod and claim in ns is controlled by a
// run that exists, no pod of a finished run still runs, the finished runs'
// claims are gone, ns has no Leases, and kquant's only Leases are the
// manager's and the agent's.
func (cl *cluster) nothingOrphaned(t *testing.T, ns string) {
	t.Helper()
	eventually(t, 2*time.Minute, "nothing orphaned in "+ns, func() error {
		runs := map[string]bool{}
		for _, r := range cl.runs(t, ns) {
			runs[string(r.UID)] = true
		}
		owned := func(o metav1.Object) bool {
			ref := metav1.GetControllerOf(o)
			return ref != nil && runs[string(ref.UID)]
		}
		pods := &corev1.PodList{}
		if err := cl.c.List(t.Context(), pods, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, p := range pods.Items {
			if !owned(&p) {
				return fmt.Errorf("pod %s has no run", p.Name)
			}
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				return fmt.Errorf("pod %s of a finished run is %s", p.Name, p.Status.Phase)
			}
		}
		claims := &resourcev1.ResourceClaimList{}
		if err := cl.c.List(t.Context(), claims, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(claims.Items) > 0 {
			return fmt.Errorf("claim %s of a finished run is left", claims.Items[0].Name)
		}
		leases := &coordinationv1.LeaseList{}
		if err := cl.c.List(t.Context(), leases, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(leases.Items) > 0 {
			return fmt.Errorf("lease %s in the job's namespace", leases.Items[0].Name)
		}
		if err := cl.c.List(t.Context(), leases, client.InNamespace(systemNamespace)); err != nil {
			return err
		}
		for _, l := range leases.Items {
			if l.Name != "kquant-manager" && l.Name != v1alpha1.AgentLeaseName(node) {
				return fmt.Errorf("lease %s/%s is neither the manager's nor the agent's", systemNamespace, l.Name)
			}
		}
		return nil
	})
}

// outOfService stops component (hack/cluster.sh stop) for down, counted
// from when the stop began, with during run meanwhile, and starts it again;
// also when the test fails in during.
func (cl *cluster) outOfService(t *testing.T, component string, down time.Duration, during func()) {
	t.Helper()
	script := filepath.Join(testenv.RepoRoot(), "hack", "cluster.sh")
	stopped := time.Now()
	if _, err := run(t.Context(), nil, script, "stop", component); err != nil {
		t.Fatal(err)
	}
	// A defer with its own context: t.Context() ends before cleanups, and a
	// failed test must not leave the cluster without its component.
	defer func() {
		time.Sleep(down - time.Since(stopped))
		if _, err := run(context.Background(), nil, script, "start", component); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s was out of service for %s", component, time.Since(stopped).Round(time.Second))
	}()
	during()
}

// settled waits until the manager and the agent each have one Ready pod, as
// the next scenario expects.
func (cl *cluster) settled(t *testing.T) {
	t.Helper()
	cl.readyPod(t, "manager", 3*time.Minute)
	cl.readyPod(t, "agent", 3*time.Minute)
}

// apiServerStoppedWhileRunsFinish stops the API server for 30 s while the
// runs finish: their pods retry their final writes until it is back (or
// leave their outcome in the termination message, which the manager
// records), so every result is recorded and no run is retried.
func apiServerStoppedWhileRunsFinish(t *testing.T, cl *cluster) {
	ns := "e2e-apiserver-stopped"
	cl.startSlowJob(t, ns, simulatedGPUs)
	from := time.Now()
	cl.outOfService(t, "kube-apiserver", outage, func() {})
	to := time.Now()
	runs := cl.finished(t, ns, v1alpha1.JobPhaseSucceeded, counts{succeeded: simulatedGPUs})
	cl.nothingOrphaned(t, ns)
	var during []string
	for _, r := range runs {
		if r.Spec.Attempt > 0 {
			t.Errorf("run %s is a retry: no run should have failed", r.Name)
		}
		if c := r.Status.CompletionTime; c != nil && c.After(from) && c.Time.Before(to) {
			during = append(during, r.Name)
		}
	}
	t.Logf("runs that finished while the API server was stopped, recorded after it came back: %v", during)
	cl.settled(t)
}

// managerKilledMidRun kills the manager's pod (no grace) while runs
// execute: the runs go on in their pods, and the new manager records each
// once, creating no second pod for any of them.
func managerKilledMidRun(t *testing.T, cl *cluster) {
	ns := "e2e-manager-killed"
	cl.startSlowJob(t, ns, 2)
	old := cl.readyPod(t, "manager", time.Minute)
	cl.kubectl(t, "delete", "pod", "-n", systemNamespace, old.Name, "--grace-period=0", "--force", "--wait=false")
	runs := cl.finished(t, ns, v1alpha1.JobPhaseSucceeded, counts{succeeded: simulatedGPUs})
	cl.nothingOrphaned(t, ns)
	for _, r := range runs {
		pod := &corev1.Pod{}
		if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: r.Name}, pod); err != nil {
			t.Fatal(err)
		}
		switch {
		case r.Spec.Attempt > 0:
			t.Errorf("run %s is a retry: no run should have failed", r.Name)
		case r.Status.RunPod == nil || r.Status.RunPod.UID != pod.UID:
			t.Errorf("run %s records run pod %+v, its pod is %s", r.Name, r.Status.RunPod, pod.UID)
		}
	}
	cl.settled(t)
}

// restartedMidRun restarts component (the kubelet or containerd) while runs
// execute; their containers keep running meanwhile. A run completes, or
// fails as a disruption and is retried: none fails by its own doing.
func restartedMidRun(component string) func(*testing.T, *cluster) {
	return func(t *testing.T, cl *cluster) {
		ns := "e2e-" + component + "-restarted"
		cl.startSlowJob(t, ns, simulatedGPUs)
		cl.outOfService(t, component, 5*time.Second, func() {})
		job := cl.waitJob(t, ns, "slow", v1alpha1.JobPhaseSucceeded, 6*time.Minute)
		cl.finished(t, ns, v1alpha1.JobPhaseSucceeded, counts{succeeded: simulatedGPUs, disruptions: job.Status.Disruptions})
		cl.nothingOrphaned(t, ns)
		cl.settled(t)
	}
}

// runPodOOMKilled sets the run pods' memory limit below what a run needs:
// the kernel kills the run, which fails with the OOM reason and counts
// against backoffLimit (0 here: the job fails).
func runPodOOMKilled(t *testing.T, cl *cluster) {
	if out, err := cl.helm(t, chartArgs("--timeout", "3m", "--set", "runPods.resources.limits.memory="+oomLimit)...); err != nil {
		t.Fatalf("helm upgrade runPods.resources.limits.memory=%s: %v\n%s", oomLimit, err, out)
	}
	// Back to the release as it was, also when the test fails; a context of
	// its own, since t.Context() ends first.
	defer func() {
		if out, err := run(context.Background(), nil, cl.helmBin, "--kubeconfig", cl.kubeconfig,
			"rollback", release, "--namespace", systemNamespace, "--wait", "--timeout", "3m"); err != nil {
			t.Errorf("helm rollback: %v\n%s", err, out)
		}
	}()
	ns := "e2e-oom"
	cl.namespace(t, ns)
	cl.apply(t, ns, nil, filepath.Join(testenv.RepoRoot(), "recipes", "fp8-current-scaling.yaml"))
	job := builders.MakeSlowBenchmark("slow", ns, 1).Shape(oomShape, oomShape).AnyGPU().BackoffLimit(0).Obj()
	if err := cl.c.Create(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	runs := cl.finished(t, ns, v1alpha1.JobPhaseFailed, counts{failed: 1})
	if r := runs[0]; r.Status.Reason != v1alpha1.RunReasonRunPodFailed || !strings.Contains(r.Status.Message, "OOMKilled") {
		t.Errorf("run %s: %s %q, want %s with OOMKilled", r.Name, r.Status.Reason, r.Status.Message, v1alpha1.RunReasonRunPodFailed)
	}
	cl.nothingOrphaned(t, ns)
}

// oomLimit and oomShape: a run of one oomShape² benchmark keeps its fp32
// inputs and outputs (64 MiB each) in host memory, far above oomLimit.
const (
	oomLimit = "96Mi"
	oomShape = 4096
)

// runPodEvicted evicts a running run pod through the Eviction API, as a
// drain does: the run fails as RunPodLost, a disruption, and its retry
// succeeds; backoffLimit (0) is untouched.
func runPodEvicted(t *testing.T, cl *cluster) {
	ns := "e2e-evicted"
	running := cl.startSlowJob(t, ns, 1)
	victim := running[0].Name
	pod := &corev1.Pod{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: victim}, pod); err != nil {
		t.Fatal(err)
	}
	if err := cl.c.SubResource("eviction").Create(t.Context(), pod, &policyv1.Eviction{}); err != nil {
		t.Fatalf("evicting run pod %s: %v", victim, err)
	}
	runs := cl.finished(t, ns, v1alpha1.JobPhaseSucceeded, counts{succeeded: simulatedGPUs, disruptions: 1})
	for _, r := range runs {
		if r.Name == victim && r.Status.Reason != v1alpha1.RunReasonRunPodLost {
			t.Errorf("evicted run %s: %s %s, want Failed %s", r.Name, r.Status.Phase, r.Status.Reason, v1alpha1.RunReasonRunPodLost)
		}
	}
	cl.nothingOrphaned(t, ns)
}

// agentRolledUnready rolls the agent DaemonSet to an image that cannot be
// pulled, so that the node has no Ready agent for agentAway (past its
// Lease's expiry), then rolls it back: in run-pod mode the agent's absence
// only stops new placements, and no run fails. The runs are frozen while
// the agent is away, so that they are in flight throughout however fast
// the machine runs them.
func agentRolledUnready(t *testing.T, cl *cluster) {
	ns := "e2e-agent-unready"
	running := cl.startSlowJob(t, ns, simulatedGPUs)
	frozen := cl.signalRunPods(t, ns, running, "STOP")
	ds := "daemonset/" + release + "-agent"
	old := cl.readyPod(t, "agent", time.Minute)
	cl.kubectl(t, "set", "image", "-n", systemNamespace, ds, "agent=kquant.local/kquant-agent:unready")
	rolled := time.Now()
	undone := false
	defer func() {
		// A failed test must not leave the node without its agent; undo
		// toggles, so only once.
		if undone {
			return
		}
		if _, err := run(context.Background(), nil, cl.kubectlBin, "--kubeconfig", cl.kubeconfig, "rollout", "undo", "-n", systemNamespace, ds); err != nil {
			t.Error(err)
		}
	}()
	eventually(t, 2*time.Minute, "the agent's new pod waiting on its image", func() error {
		for _, p := range cl.componentPods(t, "agent") {
			if p.UID == old.UID {
				return fmt.Errorf("old agent pod %s still there", p.Name)
			}
			if podReady(&p) {
				return fmt.Errorf("agent pod %s is Ready", p.Name)
			}
		}
		return nil
	})
	time.Sleep(agentAway - time.Since(rolled))
	cl.kubectl(t, "rollout", "undo", "-n", systemNamespace, ds)
	undone = true
	cl.readyPod(t, "agent", 3*time.Minute)
	t.Logf("no Ready agent for %s while runs %v were in flight", time.Since(rolled).Round(time.Second), frozen)
	cl.signalRunPods(t, ns, running, "CONT")
	cl.finished(t, ns, v1alpha1.JobPhaseSucceeded, counts{succeeded: simulatedGPUs})
	cl.nothingOrphaned(t, ns)
}

// kubeletStoppedPastGrace loses the node: its kubelet stops, and its run
// pods with it (frozen, as on a machine that hangs or is cut off; a pod
// that went on running would simply finish, since it writes its run
// itself). Past the node's grace period and the pods' toleration of an
// unreachable node, the taint manager deletes them and each run fails as
// NodeLost, a disruption; its retry waits for the node, and once the
// kubelet is back it succeeds.
func kubeletStoppedPastGrace(t *testing.T, cl *cluster) {
	ns := "e2e-node-lost"
	running := cl.startSlowJob(t, ns, simulatedGPUs)
	frozen := cl.signalRunPods(t, ns, running, "STOP")
	cl.outOfService(t, "kubelet", 0, func() {
		eventually(t, 4*time.Minute, "the frozen runs failed as NodeLost, their retries waiting", func() error {
			lost := 0
			for _, r := range cl.runs(t, ns) {
				if slices.Contains(frozen, r.Name) {
					if r.Status.Reason != v1alpha1.RunReasonNodeLost {
						return fmt.Errorf("run %s is %s %s", r.Name, r.Status.Phase, r.Status.Reason)
					}
					lost++
				}
				if r.Spec.Attempt > 0 && r.Status.Phase.IsTerminal() {
					return fmt.Errorf("retry %s ended (%s) while the node was lost", r.Name, r.Status.Phase)
				}
			}
			if lost != len(frozen) {
				return fmt.Errorf("%d of %d frozen runs lost", lost, len(frozen))
			}
			return nil
		})
	})
	cl.finished(t, ns, v1alpha1.JobPhaseSucceeded, counts{succeeded: simulatedGPUs, disruptions: int32(len(frozen))})
	cl.nothingOrphaned(t, ns)
	cl.settled(t)
}

// signalRunPods sends signal (STOP to freeze, CONT to thaw) to the run
// container of each run's pod that still runs, and returns those runs.
func (cl *cluster) signalRunPods(t *testing.T, ns string, runs []v1alpha1.QuantRun, signal string) []string {
	t.Helper()
	var signalled []string
	for _, r := range runs {
		pid := cl.runContainerPID(t, ns, r.Name)
		if pid == 0 {
			continue
		}
		if _, err := run(t.Context(), nil, "kill", "-"+signal, fmt.Sprint(pid)); err != nil {
			t.Fatal(err)
		}
		signalled = append(signalled, r.Name)
	}
	if len(signalled) == 0 {
		t.Fatalf("no run pod of %d was still running to SIG%s", len(runs), signal)
	}
	return signalled
}

// runContainerPID returns the host PID of the running container of the pod
// named name in ns, or 0 when it has none running. Still running means
// crictl's "running", runc's state, which a frozen process keeps.
func (cl *cluster) runContainerPID(t *testing.T, ns, name string) int {
	t.Helper()
	id := strings.TrimSpace(cl.crictl(t, "ps", "-q", "--label", "io.kubernetes.pod.namespace="+ns,
		"--label", "io.kubernetes.pod.name="+name, "--state", "running"))
	if id == "" {
		return 0
	}
	var inspect struct {
		Info struct {
			PID int `json:"pid"`
		} `json:"info"`
	}
	decode(t, cl.crictl(t, "inspect", "-o", "json", id), &inspect)
	return inspect.Info.PID
}

// jobDeletedMidFlight deletes a job while its runs execute through DRA
// claims: the runs, their pods and their claims all go.
func jobDeletedMidFlight(t *testing.T, cl *cluster) {
	ns := "e2e-job-deleted"
	cl.startSlowJob(t, ns, 1)
	claims := &resourcev1.ResourceClaimList{}
	if err := cl.c.List(t.Context(), claims, client.InNamespace(ns)); err != nil || len(claims.Items) == 0 {
		t.Fatalf("no claims for the running runs (%v)", err)
	}
	cl.kubectl(t, "delete", "quantjob", "-n", ns, "slow", "--wait=false")
	eventually(t, 2*time.Minute, "the job's runs, pods and claims gone", func() error {
		var left []string
		for _, list := range []client.ObjectList{&v1alpha1.QuantRunList{}, &corev1.PodList{}, &resourcev1.ResourceClaimList{}} {
			if err := cl.c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
				return err
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return err
			}
			for _, o := range items {
				m, _ := meta.Accessor(o)
				left = append(left, fmt.Sprintf("%T %s", o, m.GetName()))
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("left: %v", left)
		}
		return nil
	})
	cl.nothingOrphaned(t, ns)
}

// driverUpgradeCycled cycles the GPU Operator's upgrade label on the node:
// while it says an upgrade is on, the agent holds no handle to the
// (simulated) driver and a new job waits; at upgrade-done the agent takes
// the driver back and the job runs.
func driverUpgradeCycled(t *testing.T, cl *cluster) {
	handles := func() (float64, error) {
		agent := cl.readyPod(t, "agent", time.Minute)
		_, body := scrape(t, fmt.Sprintf("http://%s:8080/metrics", agent.Status.PodIP), "")
		for line := range strings.Lines(body) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "kquant_agent_simulated_driver_handles "); ok {
				var f float64
				_, err := fmt.Sscan(v, &f)
				return f, err
			}
		}
		return 0, fmt.Errorf("no kquant_agent_simulated_driver_handles in the agent's metrics")
	}
	if n, err := handles(); err != nil || n == 0 {
		t.Fatalf("before the upgrade the agent holds %v handles (%v), want some", n, err)
	}
	label := func(value string) {
		t.Helper()
		arg := driverupgrade.LabelUpgradeState + "=" + value
		if value == "" {
			arg = driverupgrade.LabelUpgradeState + "-"
		}
		cl.kubectl(t, "label", "node", node, "--overwrite", arg)
	}
	label("upgrade-required")
	defer func() {
		_, _ = run(context.Background(), nil, cl.kubectlBin, "--kubeconfig", cl.kubeconfig, "label", "node", node, driverupgrade.LabelUpgradeState+"-")
	}()
	eventually(t, time.Minute, "the agent released the driver", func() error {
		profile := &v1alpha1.GPUNodeProfile{}
		if err := cl.c.Get(t.Context(), client.ObjectKey{Name: node}, profile); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(profile.Status.Conditions, v1alpha1.ConditionDriverUpgrade) {
			return fmt.Errorf("profile %s is not upgrading", node)
		}
		if n, err := handles(); err != nil || n != 0 {
			return fmt.Errorf("the agent holds %v handles (%v)", n, err)
		}
		return nil
	})
	label("drain-required")
	ns := "e2e-driver-upgrade"
	cl.namespace(t, ns)
	cl.apply(t, ns, nil, filepath.Join(testenv.RepoRoot(), "recipes", "fp8-current-scaling.yaml"))
	if err := cl.c.Create(t.Context(), builders.MakeSlowBenchmark("slow", ns, 20).EachGPU().BackoffLimit(0).Obj()); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "job slow waiting for the upgrading node", func() error {
		job := &v1alpha1.QuantJob{}
		if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "slow"}, job); err != nil {
			return err
		}
		for _, c := range job.Status.Conditions {
			if c.Reason == v1alpha1.ReasonUnschedulable && strings.Contains(c.Message, "upgrading their GPU driver") {
				return nil
			}
		}
		return fmt.Errorf("conditions %+v", job.Status.Conditions)
	})
	if n, err := handles(); err != nil || n != 0 {
		t.Errorf("at drain-required the agent holds %v handles (%v), want 0", n, err)
	}
	if runs := cl.runs(t, ns); len(runs) > 0 {
		t.Errorf("job slow has %d runs on the upgrading node", len(runs))
	}
	label(driverupgrade.StateUpgradeDone)
	eventually(t, time.Minute, "the agent took the driver back", func() error {
		if n, err := handles(); err != nil || n == 0 {
			return fmt.Errorf("the agent holds %v handles (%v)", n, err)
		}
		return nil
	})
	cl.finished(t, ns, v1alpha1.JobPhaseSucceeded, counts{succeeded: simulatedGPUs})
	cl.nothingOrphaned(t, ns)
}
