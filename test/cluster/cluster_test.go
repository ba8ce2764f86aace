// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

// TestCluster runs the scenarios in order; each leaves the cluster as the
// next one expects, and helm uninstall comes last.
func TestCluster(t *testing.T) {
	cl := connect(t)
	for _, s := range []struct {
		name string
		run  func(*testing.T, *cluster)
	}{
		{"pods run as the chart says", podsAsTheChartSays},
		{"the agent writes only its own node's objects with its node-bound token", agentNodeBoundWrites},
		{"a tenant cannot make a run pod, and a pod the run did not record cannot write its status", forgedRunPods},
		{"the agent image's glibc loads the binary and dlopen looks for the driver", agentImageDlopen},
		{"jobs from recipes and samples succeed", jobsSucceed},
		{"runs wait for GPUs another pod holds, then cover them", gpusHeldByAnotherPod},
		{"preflight: an init container validates exactly its pod's GPUs; a forced Fail stays Init:Error", preflightInitContainer},
		{"MIG: slices only with the opt-in, each run pod asks for its profile", migSlices},
		{"a run pod or the agent pod deleted mid-run loses nothing", podsDeletedMidRun},
		{"a new manager pod carries on", managerPodDeleted},
		{"faults: the API server stopped 30 s while runs finish loses no result", apiServerStoppedWhileRunsFinish},
		{"faults: the manager pod killed mid-run, each run completes and is recorded once", managerKilledMidRun},
		{"faults: the kubelet restarted mid-run, runs complete or are retried as disruptions", restartedMidRun("kubelet")},
		{"faults: containerd restarted mid-run, runs complete or are retried as disruptions", restartedMidRun("containerd")},
		{"faults: a run pod OOM-killed fails with the OOM reason, counted", runPodOOMKilled},
		{"faults: a run pod evicted through the Eviction API is retried, not counted", runPodEvicted},
		{"faults: the agent rolled to an image unready for 60 s fails no run", agentRolledUnready},
		{"faults: the kubelet stopped past the grace period, runs NodeLost and retried, not counted", kubeletStoppedPastGrace},
		{"faults: the driver-upgrade label cycled, the agent releases the driver, runs pause and resume", driverUpgradeCycled},
		{"a QuantGatePolicy gates the node; re-validated, it is un-gated while the agent and the device plugin stay", gatesKeepTrainingAway},
		{"a failing validation sets the Node condition an NHC-style reader acts on; a passing one clears it", conditionsReachRemediation},
		{"idle validation holds every GPU at the lowest priority; a workload preempts it and the run is a disruption", idleValidationYields},
		{"helm upgrade with a changed value rolls the pods", helmUpgradeRolls},
		{"a wrong image tag: helm waits and reports it", wrongImageTag},
		{"DRA: a claim pinned by UUID gets that GPU, a second one waits for it", draPinsAGPU},
		{"DRA: each run pod's claim pins its run's GPU, and the run executes there", runPodsThroughDRA},
		{"Kueue gates labelled pods until admitted, and its GPU quota holds one back", kueueGatesPods},
		{"Prometheus scrapes the manager and the agent and evaluates every alert", prometheusScrapesAndAlerts},
		{"helm uninstall removes what the chart made, and its hook kquant's node marks", helmUninstall},
	} {
		ok := t.Run(s.name, func(t *testing.T) {
			start := time.Now()
			// Logged even when the scenario fails, for the suite's time budget.
			defer func() { t.Logf("wall time %s", time.Since(start).Round(time.Second)) }()
			s.run(t, cl)
		})
		if !ok {
			t.Fatalf("%q failed; the scenarios after it depend on it", s.name)
		}
	}
}

// podsAsTheChartSays checks, in the running containers, what the chart
// promises: a read-only root filesystem, no capabilities, no privilege
// escalation, the images imported into containerd, and the user: non-root
// 65532 for the manager; root for the agent, whose only reason is the
// kubelet's root-only PodResources socket (read by file ownership, with every
// capability dropped).
func podsAsTheChartSays(t *testing.T, cl *cluster) {
	wantUID := map[string]uint32{"manager": 65532, "agent": 0}
	for _, component := range []string{"manager", "agent"} {
		pod := cl.readyPod(t, component, 3*time.Minute)
		spec := pod.Spec.Containers[0]
		sc := spec.SecurityContext
		switch {
		case wantUID[component] != 0 && (pod.Spec.SecurityContext == nil || pod.Spec.SecurityContext.RunAsNonRoot == nil || !*pod.Spec.SecurityContext.RunAsNonRoot):
			t.Errorf("%s pod: runAsNonRoot not set", component)
		case sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
			t.Errorf("%s pod: readOnlyRootFilesystem not set", component)
		case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Errorf("%s pod: allowPrivilegeEscalation not false", component)
		case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}):
			t.Errorf("%s pod: capabilities.drop = %v, want [ALL]", component, sc.Capabilities)
		}
		wantImage := fmt.Sprintf("kquant.local/kquant-%s:dev", component)
		if spec.Image != wantImage {
			t.Errorf("%s pod: image %q, want %q", component, spec.Image, wantImage)
		}

		// What runc was told, from the runtime itself.
		id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
		var inspect struct {
			Info struct {
				RuntimeSpec struct {
					Process struct {
						User struct {
							UID uint32 `json:"uid"`
							GID uint32 `json:"gid"`
						} `json:"user"`
						NoNewPrivileges bool `json:"noNewPrivileges"`
						Capabilities    *struct {
							Bounding  []string `json:"bounding"`
							Effective []string `json:"effective"`
							Permitted []string `json:"permitted"`
						} `json:"capabilities"`
					} `json:"process"`
					Root struct {
						Readonly bool `json:"readonly"`
					} `json:"root"`
				} `json:"runtimeSpec"`
			} `json:"info"`
		}
		decode(t, cl.crictl(t, "inspect", "-o", "json", id), &inspect)
		p := inspect.Info.RuntimeSpec.Process
		if want := wantUID[component]; p.User.UID != want || p.User.GID != want {
			t.Errorf("%s container runs as %d:%d, want %d:%d", component, p.User.UID, p.User.GID, want, want)
		}
		if !inspect.Info.RuntimeSpec.Root.Readonly {
			t.Errorf("%s container: root filesystem is writable", component)
		}
		if !p.NoNewPrivileges {
			t.Errorf("%s container: noNewPrivileges is false", component)
		}
		if c := p.Capabilities; c != nil && (len(c.Bounding)+len(c.Effective)+len(c.Permitted)) > 0 {
			t.Errorf("%s container keeps capabilities %+v", component, *c)
		}
		t.Logf("%s pod %s: runtime spec user %d:%d, readonly root %v, noNewPrivileges %v, capabilities none",
			component, pod.Name, p.User.UID, p.User.GID, inspect.Info.RuntimeSpec.Root.Readonly, p.NoNewPrivileges)
	}
}

// agentNodeBoundWrites checks the agent's publications and, with the very
// token the kubelet mounted into the agent's pod, that the admission policy
// binds it to its node.
func agentNodeBoundWrites(t *testing.T, cl *cluster) {
	ctx := t.Context()
	profile := &v1alpha1.GPUNodeProfile{}
	eventually(t, 2*time.Minute, "GPUNodeProfile "+node+" with the simulated GPUs", func() error {
		if err := cl.c.Get(ctx, client.ObjectKey{Name: node}, profile); err != nil {
			return err
		}
		if len(profile.Status.GPUs) != simulatedGPUs+migGPUs || !profile.Status.Simulated {
			return fmt.Errorf("%d GPUs, simulated %v", len(profile.Status.GPUs), profile.Status.Simulated)
		}
		return nil
	})
	nodeObj := &corev1.Node{}
	if err := cl.c.Get(ctx, client.ObjectKey{Name: node}, nodeObj); err != nil {
		t.Fatal(err)
	}
	if got := nodeObj.Status.Allocatable["nvidia.com/gpu"]; got.Value() != simulatedGPUs {
		t.Errorf("node allocatable nvidia.com/gpu = %s, want %d (the test device plugin's)", got.String(), simulatedGPUs)
	}
	lease := &coordinationv1.Lease{}
	if err := cl.c.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: "kquant-agent-" + node}, lease); err != nil {
		t.Fatalf("the agent's Lease: %v", err)
	}
	if lease.Spec.RenewTime == nil || time.Since(lease.Spec.RenewTime.Time) > 2*time.Minute {
		t.Errorf("the agent's Lease was renewed at %v, not recently", lease.Spec.RenewTime)
	}

	token := agentToken(t, cl)
	if claim := tokenNodeName(t, token); claim != node {
		t.Fatalf("the agent's token is bound to node %q, want %q", claim, node)
	}
	asAgent := rest.AnonymousClientConfig(cl.config)
	asAgent.BearerToken = token
	agent, err := client.New(asAgent, client.Options{Scheme: cl.c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	other := &v1alpha1.GPUNodeProfile{ObjectMeta: metav1.ObjectMeta{Name: "another-node"}}
	err = agent.Create(ctx, other)
	if err == nil || !strings.Contains(err.Error(), "may write only GPUNodeProfile "+node) {
		t.Errorf("creating another node's GPUNodeProfile with the agent's token: %v, want the admission policy's denial", err)
	}
	otherLease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "kquant-agent-another-node"}}
	err = agent.Create(ctx, otherLease)
	if err == nil || !strings.Contains(err.Error(), "may write only Lease kquant-agent-"+node) {
		t.Errorf("creating another node's Lease with the agent's token: %v, want the admission policy's denial", err)
	}
	// The same token may still read and renew its own node's objects.
	own := &v1alpha1.GPUNodeProfile{}
	if err := agent.Get(ctx, client.ObjectKey{Name: node}, own); err != nil {
		t.Errorf("reading its own GPUNodeProfile with the agent's token: %v", err)
	}
	t.Logf("profile %s: %d simulated GPUs; Lease renewed %s ago; agent token bound to node %s; other nodes' writes denied",
		node, len(profile.Status.GPUs), time.Since(lease.Spec.RenewTime.Time).Round(time.Second), node)
}

// agentImageDlopen starts the agent image in a pod of its own, locked down as
// the chart's, to see what only a pod shows: the dynamic loader and glibc of
// the image run the cgo binary, and its dlopen of libcuda.so.1 (absent on
// this node) ends in the agent's "no CUDA driver" fallback, not a crash
// (--execution=None: the observer never opens the driver; a run pod, or an
// agent that executes runs itself, does). A kubeconfig that does not exist
// stops the agent right after that probe.
func agentImageDlopen(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "e2e-agent-image")
	const pod = `apiVersion: v1
kind: Pod
metadata: {name: dlopen}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: agent
    image: kquant.local/kquant-agent:dev
    args: [--node-name=probe, --execution=None, --kubeconfig=/nonexistent, --log-format=text]
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`
	cl.apply(t, ns, []byte(pod), "-")
	eventually(t, 2*time.Minute, "the probe pod to finish", func() error {
		p := &corev1.Pod{}
		if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "dlopen"}, p); err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	logs := cl.kubectl(t, "logs", "-n", ns, "dlopen")
	if !strings.Contains(logs, "no CUDA driver: libcuda.so.1: cannot open shared object file") {
		t.Errorf("the agent's log in its image does not show the dlopen fallback:\n%s", logs)
	}
	t.Logf("agent image in a pod:\n%s", logs)
}

// agentToken reads the service-account token the kubelet projected into the
// agent's pod.
func agentToken(t *testing.T, cl *cluster) string {
	t.Helper()
	pod := cl.readyPod(t, "agent", time.Minute)
	token, err := podToken(&pod)
	if err != nil {
		t.Fatalf("the agent pod's projected token: %v", err)
	}
	return token
}

// podToken reads the service-account token the kubelet projected into pod,
// from the kubelet's volume directory on this node: a token bound to the
// pod, as its containers use it.
func podToken(pod *corev1.Pod) (string, error) {
	matches, err := filepath.Glob(filepath.Join("/var/lib/kubelet/pods", string(pod.UID), "volumes", "kubernetes.io~projected", "*", "token"))
	if err != nil || len(matches) != 1 {
		return "", fmt.Errorf("pod %s/%s's projected token: %v (found %v)", pod.Namespace, pod.Name, err, matches)
	}
	token, err := os.ReadFile(matches[0])
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(token)), nil
}

// tokenNodeName is the node a service-account token is bound to, from its
// (unverified: the API server verifies it) claims.
func tokenNodeName(t *testing.T, token string) string {
	t.Helper()
	return boundTo(t, token).Node.Name
}

// boundObjects are what a pod-bound service-account token is bound to (its
// kubernetes.io claims), which the API server hands to admission as the
// user's extra authentication.kubernetes.io/{node,pod}-{name,uid}.
type boundObjects struct {
	Node struct {
		Name string `json:"name"`
	} `json:"node"`
	Pod struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
	} `json:"pod"`
}

// boundTo decodes the kubernetes.io claims of a service-account token.
func boundTo(t *testing.T, token string) boundObjects {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("the token is not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Kubernetes boundObjects `json:"kubernetes.io"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return claims.Kubernetes
}

// jobsSucceed applies the recipe catalog and two samples, a validation and a
// benchmark job, as the README does, and checks what kubectl shows.
func jobsSucceed(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "e2e-jobs")
	root := testenv.RepoRoot()
	cl.apply(t, ns, nil, filepath.Join(root, "recipes"),
		filepath.Join(root, "config", "samples", "validation-quantize.yaml"),
		filepath.Join(root, "config", "samples", "benchmark-linear.yaml"))
	for _, name := range []string{"validation-quantize", "benchmark-linear"} {
		job := cl.waitJob(t, ns, name, v1alpha1.JobPhaseSucceeded, 5*time.Minute)
		if !hasCondition(job.Status.Conditions, "Complete") {
			t.Errorf("job %s: no Complete condition in %+v", name, job.Status.Conditions)
		}
	}
	out := cl.kubectl(t, "get", "kquant", "-n", ns)
	for _, want := range []string{"quantrecipe.kquant.dev/mxfp8", "quantjob.kquant.dev/validation-quantize", "Succeeded"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get kquant does not show %q:\n%s", want, out)
		}
	}
	t.Logf("kubectl get kquant -n %s:\n%s", ns, out)
	wide := cl.kubectl(t, "get", "quantjobs,quantruns", "-n", ns, "-o", "wide")
	for _, want := range []string{"RECIPE", "PROGRESS", "NODE", "GPU", "VERDICT", node} {
		if !strings.Contains(wide, want) {
			t.Errorf("kubectl get quantjobs,quantruns -o wide does not show %q:\n%s", want, wide)
		}
	}
	t.Logf("kubectl get quantjobs,quantruns -n %s -o wide:\n%s", ns, wide)
	events := cl.kubectl(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.kind=QuantJob", "--sort-by", ".lastTimestamp")
	if !strings.Contains(events, "validation-quantize") {
		t.Errorf("no events for the jobs:\n%s", events)
	}
	t.Logf("job events:\n%s", events)
}

func hasCondition(conds []metav1.Condition, typ string) bool {
	for _, c := range conds {
		if c.Type == typ && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

// podsDeletedMidRun deletes, while runs execute, first a run pod (one second
// of grace): its run fails as RunPodLost and is retried as a new attempt;
// then the agent's pod: the observer's restart leaves the other runs' pods
// alone, and the job ends with every GPU's run succeeded.
func podsDeletedMidRun(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "e2e-pod-faults")
	root := testenv.RepoRoot()
	cl.apply(t, ns, nil, filepath.Join(root, "recipes", "fp8-current-scaling.yaml"))
	// About 15 s a run: far longer than the one second of grace the pods are
	// deleted with, so a run cannot finish in it.
	slow := builders.MakeSlowBenchmark("slow", ns, 300).EachGPU().BackoffLimit(3).Obj()
	if err := cl.c.Create(t.Context(), slow); err != nil {
		t.Fatal(err)
	}
	var running []string
	eventually(t, 3*time.Minute, "two runs Running", func() error {
		running = running[:0]
		for _, r := range cl.runs(t, ns) {
			if r.Status.Phase == v1alpha1.RunPhaseRunning {
				running = append(running, r.Name)
			}
		}
		if len(running) < 2 {
			return fmt.Errorf("runs Running: %v", running)
		}
		return nil
	})
	lost, survivor := running[0], running[1]
	// A run pod is named after its run.
	cl.kubectl(t, "delete", "pod", "-n", ns, lost, "--grace-period=1", "--wait=false")
	old := cl.readyPod(t, "agent", time.Minute)
	cl.kubectl(t, "delete", "pod", "-n", systemNamespace, old.Name, "--grace-period=1", "--wait=false")
	t.Logf("deleted run pod %s and agent pod %s while runs %v were Running", lost, old.Name, running)
	eventually(t, 3*time.Minute, "a new agent pod Ready", func() error {
		pods := cl.componentPods(t, "agent")
		for _, p := range pods {
			if p.UID != old.UID && podReady(&p) {
				return nil
			}
		}
		return fmt.Errorf("%d agent pods, none new and Ready", len(pods))
	})
	job := cl.waitJob(t, ns, "slow", v1alpha1.JobPhaseSucceeded, 8*time.Minute)
	if job.Status.Succeeded != simulatedGPUs || job.Status.Total != simulatedGPUs {
		t.Errorf("job counts %d/%d succeeded, want %d of %d (one per GPU)", job.Status.Succeeded, job.Status.Total, simulatedGPUs, simulatedGPUs)
	}
	var retried bool
	for _, r := range cl.runs(t, ns) {
		switch {
		case r.Name == lost && (r.Status.Phase != v1alpha1.RunPhaseFailed || r.Status.Reason != v1alpha1.RunReasonRunPodLost):
			t.Errorf("run %s whose pod was deleted: %s %s (%s), want Failed %s", r.Name, r.Status.Phase, r.Status.Reason, r.Status.Message, v1alpha1.RunReasonRunPodLost)
		case r.Name == survivor && r.Status.Phase != v1alpha1.RunPhaseSucceeded:
			t.Errorf("run %s, running while the agent restarted: %s %s, want Succeeded", r.Name, r.Status.Phase, r.Status.Reason)
		case r.Spec.Attempt > 0:
			// Attempts count from 0: slot 2's retry is run slow-2-1.
			retried = true
		}
	}
	if !retried {
		t.Errorf("run %s was not retried:\n%s", lost, cl.kubectl(t, "get", "quantruns", "-n", ns, "-o", "yaml"))
	}
	t.Logf("job slow: %d/%d succeeded\n%s", job.Status.Succeeded, job.Status.Total, cl.kubectl(t, "get", "quantruns", "-n", ns, "-o", "wide"))
}

// managerPodDeleted deletes the manager's pod: the Deployment's new pod takes
// the leader Lease and a new job still runs to the end.
func managerPodDeleted(t *testing.T, cl *cluster) {
	old := cl.readyPod(t, "manager", time.Minute)
	cl.kubectl(t, "delete", "pod", "-n", systemNamespace, old.Name, "--wait=false")
	fresh := cl.readyPod(t, "manager", 3*time.Minute)
	if fresh.UID == old.UID {
		t.Fatalf("manager pod %s was not replaced", old.Name)
	}
	eventually(t, 2*time.Minute, "the new manager pod holds the leader Lease", func() error {
		lease := &coordinationv1.Lease{}
		if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: systemNamespace, Name: "kquant-manager"}, lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || !strings.HasPrefix(*lease.Spec.HolderIdentity, fresh.Name) {
			return fmt.Errorf("held by %v", lease.Spec.HolderIdentity)
		}
		return nil
	})
	ns := cl.namespace(t, "e2e-new-leader")
	root := testenv.RepoRoot()
	cl.apply(t, ns, nil, filepath.Join(root, "recipes", "mxfp8.yaml"), filepath.Join(root, "config", "samples", "validation-quantize.yaml"))
	cl.waitJob(t, ns, "validation-quantize", v1alpha1.JobPhaseSucceeded, 5*time.Minute)
	t.Logf("manager pod %s replaced by %s, which leads and ran a new job", old.Name, fresh.Name)
}

// helmUpgradeRolls changes a pod annotation through helm upgrade: both
// workloads roll to new pods that carry it.
func helmUpgradeRolls(t *testing.T, cl *cluster) {
	before := map[string]corev1.Pod{}
	for _, component := range []string{"manager", "agent"} {
		before[component] = cl.readyPod(t, component, time.Minute)
	}
	out, err := cl.helm(t, chartArgs("--timeout", "4m",
		"--set", `manager.podAnnotations.e2e\.kquant\.dev/revision=upgraded`,
		"--set", `agent.podAnnotations.e2e\.kquant\.dev/revision=upgraded`)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helm upgrade:\n%s", out)
	for component, old := range before {
		pod := cl.readyPod(t, component, 3*time.Minute)
		if pod.UID == old.UID {
			t.Errorf("%s pod %s did not roll", component, old.Name)
		}
		if pod.Annotations["e2e.kquant.dev/revision"] != "upgraded" {
			t.Errorf("%s pod %s lacks the upgraded annotation", component, pod.Name)
		}
	}
}

// wrongImageTag upgrades to an image tag that does not exist: the pull fails
// on the node (nothing is pulled from anywhere), helm's wait times out and says
// so, the old manager pod keeps running, and a rollback restores the release.
// The CRD upgrade hook runs the manager's image too and would fail first,
// before the Deployment changes; it is off for this upgrade so that the
// Deployment's own rollout is what fails.
func wrongImageTag(t *testing.T, cl *cluster) {
	out, err := cl.helm(t, chartArgs("--timeout", "60s", "--set", "manager.image.tag=no-such-tag", "--set", "crds.upgradeHook.enabled=false")...)
	if err == nil {
		t.Fatalf("helm upgrade to a missing image succeeded:\n%s", out)
	}
	t.Logf("helm upgrade --set manager.image.tag=no-such-tag --wait:\n%s", out)
	var reason string
	eventually(t, 2*time.Minute, "a manager pod waiting on its image", func() error {
		for _, p := range cl.componentPods(t, "manager") {
			for _, s := range p.Status.ContainerStatuses {
				if w := s.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
					reason = w.Reason + ": " + w.Message
					return nil
				}
			}
		}
		return fmt.Errorf("no manager pod is waiting on its image yet")
	})
	if !strings.Contains(reason, "no-such-tag") {
		t.Errorf("the pull error does not name the image: %s", reason)
	}
	t.Logf("the manager pod: %s", reason)
	t.Logf("kubectl get pods:\n%s", cl.kubectl(t, "get", "pods", "-n", systemNamespace))
	if n := len(cl.componentPods(t, "manager")); n < 2 {
		t.Errorf("%d manager pods, want the old one still running beside the failing one", n)
	}
	rollback, err := cl.helm(t, "rollback", release, "--namespace", systemNamespace, "--wait", "--timeout", "3m")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helm rollback:\n%s", rollback)
	cl.readyPod(t, "manager", 3*time.Minute)
	eventually(t, 2*time.Minute, "the failing manager pod gone", func() error {
		if n := len(cl.componentPods(t, "manager")); n != 1 {
			return fmt.Errorf("%d manager pods", n)
		}
		return nil
	})
}

// helmUninstall removes the release: nothing labelled with it stays, in any
// namespace or cluster-wide. Its post-delete hook takes kquant's marks off
// the node: the recipe labels (kquant.dev/fp8...), the gate label and taint
// that the previous scenario's failing QuantGatePolicy left (gate.kquant.dev/fp8;
// the hook's pod tolerates that taint), and the GPUNodeProfiles. The CRDs
// stay, as Helm keeps crds/ (documented in the chart README), and with them
// the users' jobs.
func helmUninstall(t *testing.T, cl *cluster) {
	before := cl.kquantMarks(t)
	if len(before) == 0 {
		t.Fatalf("node %s has no kquant labels or taints before the uninstall: nothing for the hook to remove", node)
	}
	profiles := &v1alpha1.GPUNodeProfileList{}
	if err := cl.c.List(t.Context(), profiles); err != nil || len(profiles.Items) == 0 {
		t.Fatalf("GPUNodeProfiles before the uninstall: %d (%v), want the agent's", len(profiles.Items), err)
	}
	t.Logf("before the uninstall: node %s has %v; %d GPUNodeProfiles", node, before, len(profiles.Items))
	out, err := cl.helm(t, "uninstall", release, "--namespace", systemNamespace, "--wait", "--timeout", "3m")
	if err != nil {
		t.Logf("kubectl get jobs,pods:\n%s", cl.kubectl(t, "get", "jobs,pods", "-n", systemNamespace, "-o", "wide"))
		t.Fatal(err)
	}
	t.Logf("helm uninstall:\n%s", out)
	// Helm waits for a post-delete hook Job to complete: the marks are gone now.
	if left := cl.kquantMarks(t); len(left) > 0 {
		t.Errorf("node %s keeps kquant's %v after the uninstall hook", node, left)
	}
	if err := cl.c.List(t.Context(), profiles); err != nil || len(profiles.Items) != 0 {
		t.Errorf("GPUNodeProfiles after the uninstall hook: %d (%v), want none", len(profiles.Items), err)
	}
	kinds := "deployments,daemonsets,replicasets,pods,services,serviceaccounts,roles,rolebindings,clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings,configmaps,jobs"
	eventually(t, 2*time.Minute, "nothing of the release left", func() error {
		left := strings.TrimSpace(cl.kubectl(t, "get", kinds, "-A", "-l", "app.kubernetes.io/instance="+release, "-o", "name"))
		if left != "" {
			return fmt.Errorf("still there:\n%s", left)
		}
		return nil
	})
	crds := cl.kubectl(t, "get", "crds", "-o", "name")
	if !strings.Contains(crds, "quantjobs.kquant.dev") {
		t.Errorf("the CRDs went with the release; Helm keeps crds/:\n%s", crds)
	}
}

// kquantMarks are the node's labels, taints and conditions in kquant's
// domain or its subdomains (any key with "kquant.dev/" in it): "label
// <key>=<value>", "taint <key>:<effect>" and "condition <type>=<status>".
func (cl *cluster) kquantMarks(t *testing.T) []string {
	t.Helper()
	n := &corev1.Node{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	var marks []string
	for k, v := range n.Labels {
		if strings.Contains(k, "kquant.dev/") {
			marks = append(marks, "label "+k+"="+v)
		}
	}
	for _, taint := range n.Spec.Taints {
		if strings.Contains(taint.Key, "kquant.dev/") {
			marks = append(marks, "taint "+taint.Key+":"+string(taint.Effect))
		}
	}
	for _, c := range n.Status.Conditions {
		if strings.Contains(string(c.Type), "kquant.dev/") {
			marks = append(marks, "condition "+string(c.Type)+"="+string(c.Status))
		}
	}
	slices.Sort(marks)
	return marks
}
