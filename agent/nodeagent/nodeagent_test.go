// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nodeagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/go-logr/logr"

	"github.com/kquant/kquant/agent/executor"
	"github.com/kquant/kquant/agent/nodeagent"
	"github.com/kquant/kquant/agent/profile"
	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
	"github.com/kquant/kquant/test/testenv"
)

const agentNamespace = "kquant-system"

var env *testenv.Env

func TestMain(m *testing.M) {
	// controller-runtime warns (with a stack) when its global logger is never set.
	ctrllog.SetLogger(logr.Discard())
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: agentNamespace}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// agent is a running agent of a test.
type agent struct {
	cancel   context.CancelFunc
	shutdown chan struct{}
	done     chan error
	stopOnce sync.Once
	waitOnce sync.Once
}

// startAgent runs an agent until the test ends (or kill/stop).
func startAgent(t *testing.T, opts nodeagent.Options) *agent {
	t.Helper()
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	if opts.LeaseRenewInterval == 0 {
		opts.LeaseRenewInterval = 200 * time.Millisecond
	}
	if opts.BusyRequeue == 0 {
		opts.BusyRequeue = 100 * time.Millisecond
	}
	if opts.Execution == "" {
		// Most tests here are about in-agent execution.
		opts.Execution = nodeagent.ExecutionNone
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &agent{cancel: cancel, shutdown: make(chan struct{}), done: make(chan error, 1)}
	go func() { a.done <- nodeagent.Run(ctx, env.Config, opts, a.shutdown) }()
	t.Cleanup(func() { a.kill(t) })
	return a
}

// kill stops the agent without the graceful path, as SIGKILL would.
func (a *agent) kill(t *testing.T) {
	t.Helper()
	a.cancel()
	a.wait(t)
}

// stop shuts the agent down gracefully, as SIGTERM does.
func (a *agent) stop(t *testing.T) {
	t.Helper()
	a.stopOnce.Do(func() { close(a.shutdown) })
	a.wait(t)
}

func (a *agent) wait(t *testing.T) {
	t.Helper()
	a.waitOnce.Do(func() {
		select {
		case err := <-a.done:
			if err != nil {
				t.Errorf("agent returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("agent did not stop within 30s")
		}
	})
}

func spec(t *testing.T, s string) simulate.Spec {
	t.Helper()
	sp, err := simulate.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// eventually polls f every 50ms until it returns nil, failing after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func getProfile(ctx context.Context, node string) (*v1alpha1.GPUNodeProfile, error) {
	p := &v1alpha1.GPUNodeProfile{}
	return p, env.Client.Get(ctx, client.ObjectKey{Name: node}, p)
}

func TestSimulatedAgentPublishesProfileForEachProduct(t *testing.T) {
	ctx := context.Background()
	// One node has a Node object, to check the owner reference.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "sim-h100"}}
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	keys := simulate.Keys()
	for _, key := range keys {
		startAgent(t, nodeagent.Options{
			NodeName: nodeName(key), Namespace: agentNamespace, AgentVersion: "test",
			Simulate: spec(t, key+":2"),
		})
	}
	for _, key := range keys {
		t.Run(key, func(t *testing.T) {
			product, _ := simulate.Lookup(key)
			var p *v1alpha1.GPUNodeProfile
			eventually(t, 20*time.Second, "profile "+nodeName(key), func() (err error) {
				if p, err = getProfile(ctx, nodeName(key)); err != nil {
					return err
				}
				if p.Status.GPUCount == 0 {
					return fmt.Errorf("status not published yet")
				}
				return nil
			})
			st := p.Status
			if st.GPUCount != 2 || len(st.GPUs) != 2 || !st.Simulated || st.Backend != v1alpha1.BackendReference ||
				st.DriverVersion != simulate.DriverVersion || st.CUDADriverVersion != "13.0" || st.AgentVersion != "test" || st.Baselines != nil {
				t.Errorf("node fields wrong: %+v", st)
			}
			wantRecipes := capability.ForGPU(product.ComputeCapability, capability.V(13, 0))
			for i, g := range st.GPUs {
				if g.Index != int32(i) || g.UUID != simulate.UUID(nodeName(key), i) || g.Product != product.Name ||
					g.ComputeCapability != product.ComputeCapability.String() ||
					g.Architecture != capability.Architecture(product.ComputeCapability) ||
					g.MemoryMiB != product.MemoryMiB || g.Health != v1alpha1.HealthHealthy {
					t.Errorf("GPU %d wrong: %+v", i, g)
				}
				if fmt.Sprint(g.Recipes) != fmt.Sprint(wantRecipes) {
					t.Errorf("GPU %d recipes %v, want %v", i, g.Recipes, wantRecipes)
				}
			}
			if fmt.Sprint(st.Recipes) != fmt.Sprint(wantRecipes) {
				t.Errorf("node recipes %v, want %v", st.Recipes, wantRecipes)
			}
			if !meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionReady) {
				t.Errorf("profile not Ready: %+v", st.Conditions)
			}
			if key == "H100" {
				if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "Node" || p.OwnerReferences[0].UID != node.UID {
					t.Errorf("owner references %+v, want the Node", p.OwnerReferences)
				}
			} else if len(p.OwnerReferences) != 0 {
				t.Errorf("owner references %+v without a Node", p.OwnerReferences)
			}
			for _, mf := range p.ManagedFields {
				if mf.Manager != profile.FieldManager {
					t.Errorf("field manager %q wrote the profile", mf.Manager)
				}
			}
		})
	}

	t.Run("LeaseKeepsFresh", func(t *testing.T) {
		key := client.ObjectKey{Namespace: agentNamespace, Name: v1alpha1.AgentLeaseName(nodeName("H200"))}
		first := &coordinationv1.Lease{}
		eventually(t, 10*time.Second, "lease", func() error { return env.Client.Get(ctx, key, first) })
		if ptr.Deref(first.Spec.LeaseDurationSeconds, 0) != 40 || first.Spec.RenewTime == nil || ptr.Deref(first.Spec.HolderIdentity, "") == "" {
			t.Fatalf("lease spec %+v", first.Spec)
		}
		eventually(t, 5*time.Second, "lease renewal", func() error {
			now := &coordinationv1.Lease{}
			if err := env.Client.Get(ctx, key, now); err != nil {
				return err
			}
			if !now.Spec.RenewTime.After(first.Spec.RenewTime.Time) {
				return fmt.Errorf("renewTime still %s", now.Spec.RenewTime)
			}
			return nil
		})
	})
}

func nodeName(key string) string { return "sim-" + lower(key) }

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// bindTime is the bind-time annotation of the runs newRun creates.
const bindTime = "2026-11-22T06:00:00Z"

// newRun creates a run bound to node's GPU index as the controller's binding
// leaves it: spec.nodeName, gpuUUID, gpuIndex, the node label and the
// bind-time annotation, and no status (the API server defaults the phase to
// Pending).
func newRun(t *testing.T, ns, name, node string, gpuIndex int, labelNode string) *v1alpha1.QuantRun {
	t.Helper()
	ctx := context.Background()
	run := &v1alpha1.QuantRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			v1alpha1.LabelJob: "job", v1alpha1.LabelNode: labelNode,
		}, Annotations: map[string]string{v1alpha1.AnnotationBindTime: bindTime}},
		Spec: v1alpha1.QuantRunSpec{
			JobRef: v1alpha1.JobReference{Name: "job"},
			Recipe: v1alpha1.RecipeSnapshot{Name: "fp8-delayed", Spec: v1alpha1.QuantRecipeSpec{
				Scheme: v1alpha1.SchemeDelayedScaling, Format: v1alpha1.FormatHybrid,
			}},
			Mode:      v1alpha1.JobModeBenchmark,
			Workload:  v1alpha1.Workload{Shapes: []v1alpha1.Shape{{Rows: 4096, Cols: 4096}, {Rows: 128, Cols: 4096}}},
			Execution: v1alpha1.Execution{Graphs: v1alpha1.GraphModeBoth},
			NodeName:  node,
			GPUUUID:   simulate.UUID(node, gpuIndex),
			GPUIndex:  ptr.To(int32(gpuIndex)),
		},
	}
	if err := env.Client.Create(ctx, run); err != nil {
		t.Fatal(err)
	}
	return run
}

// markBoundAsBefore writes status Bound and bindTime as earlier managers did
// after binding, through a field manager of its own.
func markBoundAsBefore(t *testing.T, run *v1alpha1.QuantRun, at time.Time) {
	t.Helper()
	bind := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "QuantRun",
		"metadata": map[string]any{"name": run.Name, "namespace": run.Namespace},
		"status":   map[string]any{"phase": "Bound", "bindTime": at.UTC().Format(time.RFC3339)},
	}}
	if err := env.Client.Status().Apply(context.Background(), client.ApplyConfigurationFromUnstructured(bind),
		client.FieldOwner("kquant-controller"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
}

func getRun(ctx context.Context, ns, name string) (*v1alpha1.QuantRun, error) {
	r := &v1alpha1.QuantRun{}
	return r, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, r)
}

func waitPhase(t *testing.T, ns, name string, phase v1alpha1.RunPhase, timeout time.Duration) *v1alpha1.QuantRun {
	t.Helper()
	var r *v1alpha1.QuantRun
	eventually(t, timeout, name+" "+string(phase), func() (err error) {
		if r, err = getRun(context.Background(), ns, name); err != nil {
			return err
		}
		if r.Status.Phase != phase {
			return fmt.Errorf("phase %q (%s)", r.Status.Phase, r.Status.Message)
		}
		return nil
	})
	return r
}

func agentTouched(r *v1alpha1.QuantRun) bool {
	for _, mf := range r.ManagedFields {
		if mf.Manager == executor.FieldManager {
			return true
		}
	}
	return false
}

func TestBoundRunSucceedsAndOtherNodesRunsAreUntouched(t *testing.T) {
	ctx := context.Background()
	ns, err := env.CreateNamespace(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	const node = "run-node"
	reg := prometheus.NewRegistry()
	startAgent(t, nodeagent.Options{NodeName: node, Namespace: agentNamespace, AgentID: "run-node-1",
		Simulate: spec(t, "H100:2"), Registerer: reg})

	other := newRun(t, ns, "other-node", "elsewhere", 0, "elsewhere")
	mislabelled := newRun(t, ns, "label-mismatch", "elsewhere", 0, node)
	newRun(t, ns, "mine", node, 1, node)
	// A run bound by an earlier manager, with status Bound, runs too. It
	// reaches the agent's label-filtered cache only once it is Bound, as it
	// did under those managers (otherwise the agent could start it before
	// the test's Bound write, which would then overwrite Running).
	legacyBind := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	legacy := newRun(t, ns, "mine-bound-before", node, 0, "not-yet")
	markBoundAsBefore(t, legacy, legacyBind)
	labelled := legacy.DeepCopy()
	labelled.Labels[v1alpha1.LabelNode] = node
	if err := env.Client.Patch(ctx, labelled, client.MergeFrom(legacy)); err != nil {
		t.Fatal(err)
	}

	r := waitPhase(t, ns, "mine", v1alpha1.RunPhaseSucceeded, 20*time.Second)
	if r.Status.AgentID != "run-node-1" || r.Status.StartTime == nil || r.Status.CompletionTime == nil ||
		r.Status.BindTime == nil || r.Status.BindTime.UTC().Format(time.RFC3339) != bindTime {
		t.Errorf("status fields: %+v (want bindTime %s from the annotation)", r.Status, bindTime)
	}
	if legacy := waitPhase(t, ns, "mine-bound-before", v1alpha1.RunPhaseSucceeded, 20*time.Second); legacy.Status.BindTime == nil || !legacy.Status.BindTime.Time.Equal(legacyBind) {
		t.Errorf("run bound before: bindTime %v, want %s", legacy.Status.BindTime, legacyBind)
	}
	res := r.Status.Results
	if res == nil || res.Verdict != v1alpha1.VerdictPass || res.Capability == nil || !res.Capability.Native ||
		res.Performance == nil || res.Performance.BandwidthGBps == "" || len(res.Shapes) != 2 {
		data, _ := json.Marshal(res)
		t.Errorf("results: %s", data)
	}
	if len(r.Status.Conditions) != 0 {
		t.Errorf("unexpected conditions %+v", r.Status.Conditions)
	}

	// The agent has been busy long enough to have seen the other runs, had it
	// been watching them.
	for _, name := range []string{other.Name, mislabelled.Name} {
		got, err := getRun(ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != v1alpha1.RunPhasePending || agentTouched(got) {
			t.Errorf("run %s touched: phase %s, managers %v", name, got.Status.Phase, got.ManagedFields)
		}
	}

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range families {
		seen[f.GetName()] = true
	}
	for _, name := range []string{"kquant_agent_runs_total", "kquant_agent_run_duration_seconds", "kquant_agent_last_bandwidth_bytes_per_second"} {
		if !seen[name] {
			t.Errorf("metric %s missing", name)
		}
	}
}

// blockingRunner blocks every run until its context ends, and says when a
// run started.
type blockingRunner struct {
	once    sync.Once
	started chan struct{}
}

func (b *blockingRunner) Run(ctx context.Context, run *v1alpha1.QuantRun, _ v1alpha1.GPU) (*v1alpha1.RunResults, error) {
	b.once.Do(func() { close(b.started) })
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestKilledAgentRestartsRunningRun(t *testing.T) {
	ctx := context.Background()
	ns, err := env.CreateNamespace(ctx, "restart")
	if err != nil {
		t.Fatal(err)
	}
	const node = "crash-node"
	blocker := &blockingRunner{started: make(chan struct{})}
	first := startAgent(t, nodeagent.Options{NodeName: node, Namespace: agentNamespace, AgentID: "crash-node-1",
		Simulate: spec(t, "B200:1"), Runner: blocker})
	newRun(t, ns, "survivor", node, 0, node)
	r := waitPhase(t, ns, "survivor", v1alpha1.RunPhaseRunning, 20*time.Second)
	if r.Status.AgentID != "crash-node-1" {
		t.Fatalf("agentID %q", r.Status.AgentID)
	}
	<-blocker.started
	first.kill(t)
	if r, _ = getRun(ctx, ns, "survivor"); r.Status.Phase != v1alpha1.RunPhaseRunning {
		t.Fatalf("a killed agent wrote phase %s", r.Status.Phase)
	}

	startAgent(t, nodeagent.Options{NodeName: node, Namespace: agentNamespace, AgentID: "crash-node-2",
		Simulate: spec(t, "B200:1")})
	r = waitPhase(t, ns, "survivor", v1alpha1.RunPhaseSucceeded, 20*time.Second)
	if r.Status.AgentID != "crash-node-2" || r.Status.Results == nil {
		t.Errorf("agentID %q results %v", r.Status.AgentID, r.Status.Results)
	}
	c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.RunConditionRestarted)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != executor.ReasonAgentRestarted {
		t.Errorf("Restarted condition %+v", c)
	}
}

func TestGracefulShutdownRecordsAbandonedRun(t *testing.T) {
	ctx := context.Background()
	ns, err := env.CreateNamespace(ctx, "drain")
	if err != nil {
		t.Fatal(err)
	}
	const node = "drain-node"
	blocker := &blockingRunner{started: make(chan struct{})}
	a := startAgent(t, nodeagent.Options{NodeName: node, Namespace: agentNamespace, AgentID: "drain-node-1",
		Simulate: spec(t, "H200:2"), Runner: blocker, ShutdownGrace: 300 * time.Millisecond})
	newRun(t, ns, "long", node, 0, node)
	waitPhase(t, ns, "long", v1alpha1.RunPhaseRunning, 20*time.Second)
	<-blocker.started
	a.stop(t)

	r, err := getRun(ctx, ns, "long")
	if err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.RunConditionAbandoned)
	if r.Status.Phase != v1alpha1.RunPhaseFailed || c == nil || c.Status != metav1.ConditionTrue || r.Status.CompletionTime == nil {
		t.Errorf("phase %s, Abandoned %+v", r.Status.Phase, c)
	}
	p, err := getProfile(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	ready := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != profile.ReasonAgentStopping {
		t.Errorf("Ready after shutdown %+v", ready)
	}
}

func TestGracefulShutdownLetsRunFinish(t *testing.T) {
	ctx := context.Background()
	ns, err := env.CreateNamespace(ctx, "finish")
	if err != nil {
		t.Fatal(err)
	}
	const node = "finish-node"
	a := startAgent(t, nodeagent.Options{NodeName: node, Namespace: agentNamespace, AgentID: "finish-node-1",
		Simulate: spec(t, "L40S:1"), Runner: simulate.Runner{Delay: 1500 * time.Millisecond},
		ShutdownGrace: 20 * time.Second})
	newRun(t, ns, "short", node, 0, node)
	waitPhase(t, ns, "short", v1alpha1.RunPhaseRunning, 20*time.Second)
	a.stop(t)

	r, err := getRun(ctx, ns, "short")
	if err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.RunConditionAbandoned)
	if r.Status.Phase != v1alpha1.RunPhaseSucceeded || c == nil || c.Status != metav1.ConditionFalse || c.Reason != executor.ReasonFinishedDuringShutdown {
		t.Errorf("phase %s, Abandoned %+v", r.Status.Phase, c)
	}
}

func TestRunOnUnknownGPUFails(t *testing.T) {
	ctx := context.Background()
	ns, err := env.CreateNamespace(ctx, "nogpu")
	if err != nil {
		t.Fatal(err)
	}
	const node = "small-node"
	startAgent(t, nodeagent.Options{NodeName: node, Namespace: agentNamespace, Simulate: spec(t, "A100:1")})
	newRun(t, ns, "ghost", node, 5, node) // the node has GPU 0 only
	r := waitPhase(t, ns, "ghost", v1alpha1.RunPhaseFailed, 20*time.Second)
	if r.Status.Message == "" || r.Status.CompletionTime == nil {
		t.Errorf("status %+v", r.Status)
	}
}

// gatedRunner holds every run until release is closed, then succeeds, and
// says when a run started and when it returned.
type gatedRunner struct {
	startOnce, doneOnce sync.Once
	started, release    chan struct{}
	returned            chan struct{}
}

func (g *gatedRunner) Run(ctx context.Context, run *v1alpha1.QuantRun, gpu v1alpha1.GPU) (*v1alpha1.RunResults, error) {
	g.startOnce.Do(func() { close(g.started) })
	defer g.doneOnce.Do(func() { close(g.returned) })
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return simulate.Runner{}.Run(ctx, run, gpu)
}

// The agent's end-of-run write is conditional on its claim's version: when
// the controller decided the run's fate meanwhile (here NodeLost), that
// decision stands and the agent's result is dropped, not written over it.
func TestControllerVerdictDuringRunStands(t *testing.T) {
	ctx := context.Background()
	ns, err := env.CreateNamespace(ctx, "verdict")
	if err != nil {
		t.Fatal(err)
	}
	const node = "verdict-node"
	gate := &gatedRunner{started: make(chan struct{}), release: make(chan struct{}), returned: make(chan struct{})}
	startAgent(t, nodeagent.Options{NodeName: node, Namespace: agentNamespace, AgentID: "verdict-node-1",
		Simulate: spec(t, "H100:1"), Runner: gate})
	newRun(t, ns, "judged", node, 0, node)
	r := waitPhase(t, ns, "judged", v1alpha1.RunPhaseRunning, 20*time.Second)
	<-gate.started

	verdictStands(t, r, gate)
}

// verdictStands writes what the node-lifecycle controller writes when the
// node's Lease expires (NodeLost) on r, lets the gated runner finish, and
// checks that the agent, which records the end right after the runner
// returns, does not overwrite the verdict within ample time.
func verdictStands(t *testing.T, r *v1alpha1.QuantRun, gate *gatedRunner) {
	t.Helper()
	ctx := context.Background()
	r.Status.Phase, r.Status.Reason, r.Status.Message = v1alpha1.RunPhaseFailed, v1alpha1.ReasonNodeLost, "node "+r.Spec.NodeName+" lost"
	if err := env.Client.Status().Update(ctx, r, client.FieldOwner("kquant-manager")); err != nil {
		t.Fatal(err)
	}
	close(gate.release)
	<-gate.returned
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		got, err := getRun(ctx, r.Namespace, r.Name)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != v1alpha1.RunPhaseFailed || got.Status.Reason != v1alpha1.ReasonNodeLost || got.Status.Results != nil {
			t.Fatalf("the agent overwrote the controller's verdict: phase %s reason %q results %v", got.Status.Phase, got.Status.Reason, got.Status.Results != nil)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A run that ends within RunningAfter is recorded once, bound to its end:
// no watcher ever sees it Running, and its status says when it started.
func TestShortRunIsRecordedInOneWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns, err := env.CreateNamespace(ctx, "short")
	if err != nil {
		t.Fatal(err)
	}
	const node = "short-node"
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &v1alpha1.QuantRunList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	startAgent(t, nodeagent.Options{NodeName: node, Namespace: agentNamespace, AgentID: "short-node-1",
		Simulate: spec(t, "H100:1"), RunningAfter: time.Minute})
	newRun(t, ns, "quick", node, 0, node)

	var phases []v1alpha1.RunPhase
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			t.Fatalf("watch: %v", ev.Object)
		}
		r := ev.Object.(*v1alpha1.QuantRun)
		phases = append(phases, r.Status.Phase)
		if r.Status.Phase == v1alpha1.RunPhaseSucceeded {
			if r.Status.StartTime == nil || r.Status.CompletionTime == nil || r.Status.AgentID != "short-node-1" {
				t.Errorf("status of the one write: %+v", r.Status)
			}
			break
		}
	}
	if len(phases) != 2 || phases[len(phases)-1] != v1alpha1.RunPhaseSucceeded {
		t.Errorf("phases seen: %v, want the creation and then Succeeded", phases)
	}
}

// The controller's verdict on a run that the agent is executing but has
// not recorded Running yet stands too: the end's write is conditional on
// the version the agent decided on.
func TestControllerVerdictBeforeRunningStands(t *testing.T) {
	ctx := context.Background()
	ns, err := env.CreateNamespace(ctx, "unrecorded")
	if err != nil {
		t.Fatal(err)
	}
	const node = "unrecorded-node"
	gate := &gatedRunner{started: make(chan struct{}), release: make(chan struct{}), returned: make(chan struct{})}
	startAgent(t, nodeagent.Options{NodeName: node, Namespace: agentNamespace, AgentID: "unrecorded-node-1",
		Simulate: spec(t, "H100:1"), Runner: gate, RunningAfter: time.Minute})
	newRun(t, ns, "judged", node, 0, node)
	<-gate.started
	r, err := getRun(ctx, ns, "judged")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status.Phase != v1alpha1.RunPhasePending {
		t.Fatalf("phase %s before RunningAfter, want Pending", r.Status.Phase)
	}
	verdictStands(t, r, gate)
}
