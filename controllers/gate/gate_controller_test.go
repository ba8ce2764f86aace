// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gate_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/gateowners"
	"github.com/kquant/kquant/controllers/gate"
	"github.com/kquant/kquant/controllers/internal/indexer"
	gatedomain "github.com/kquant/kquant/domain/gate"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

// managerNS is the manager's own namespace: only runs there count.
const managerNS = "kquant-system"

var c client.Client

// TestMain starts a control plane and a manager with the indexes and the
// gate controller only: nothing else writes Nodes, jobs or runs.
func TestMain(m *testing.M) {
	testenv.Main(m, func(ctx context.Context, env *testenv.Env, mgr manager.Manager) error {
		c = env.Client
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNS}}); err != nil {
			return err
		}
		if err := indexer.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
		return gate.New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("kquant-manager"), clock.RealClock{}, managerNS).SetupWithManager(mgr)
	})
}

// create creates objs in order.
func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
}

// finish creates a finished run of job on GPU index of node with verdict v,
// completed at.
func finish(t *testing.T, ns, job, name, node string, index int, scheme kquantv1alpha1.Scheme, v kquantv1alpha1.Verdict, at time.Time) {
	t.Helper()
	run := builders.MakeQuantRun(name, ns, job).Bound(node, index).Scheme(scheme).Results("100", "10", "2", "30", v).Completed(at).Obj()
	if err := testenv.CreateWithStatus(t.Context(), c, run); err != nil {
		t.Fatal(err)
	}
}

// policyJob creates policy and its validation job in the manager's namespace.
func policyJob(t *testing.T, policy *kquantv1alpha1.QuantGatePolicy, job string) {
	t.Helper()
	create(t, policy) // first: the job's owner reference takes its UID
	create(t, builders.MakeQuantJob(job, managerNS).ClusterRecipe(policy.Spec.RecipeRef.Name).EachGPU().ControlledBy(policy).Obj())
}

// nodeGate is what a node shows of its gates.
type nodeGate struct {
	labels map[string]string // gate labels only
	taints []corev1.Taint    // but the API server's
	owners map[string]string // key -> policy
}

func readGate(t *testing.T, node string) nodeGate {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	// The API server's own taints (node.kubernetes.io/not-ready on a new
	// Node) are no gate's business.
	got := nodeGate{labels: map[string]string{}, owners: map[string]string{}, taints: slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return strings.HasPrefix(t.Key, "node.kubernetes.io/")
	})}
	for k, v := range n.Labels {
		if strings.HasPrefix(k, kquantv1alpha1.GateLabelPrefix) {
			got.labels[k] = v
		}
	}
	owners, err := gateowners.Of(n.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	for k, o := range owners {
		got.owners[k] = o.Policy
	}
	return got
}

func (g nodeGate) equal(w nodeGate) bool {
	return maps.Equal(g.labels, w.labels) && maps.Equal(g.owners, w.owners) && slices.EqualFunc(g.taints, w.taints, func(a, b corev1.Taint) bool {
		return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
	})
}

// waitNode waits until node's gates are want.
func waitNode(t *testing.T, node string, want nodeGate) {
	t.Helper()
	var got nodeGate
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got = readGate(t, node); got.equal(want) {
			return
		}
	}
	t.Fatalf("node %s: got %+v, want %+v", node, got, want)
}

// waitEvent waits for an Event of reason about regarding (kind/name) whose
// note contains every one of parts, and returns it.
func waitEvent(t *testing.T, kind, name, reason string, parts ...string) eventsv1.Event {
	t.Helper()
	var seen []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		list := &eventsv1.EventList{}
		if err := c.List(t.Context(), list); err != nil {
			t.Fatal(err)
		}
		seen = seen[:0]
		for _, e := range list.Items {
			if e.Regarding.Kind != kind || e.Regarding.Name != name {
				continue
			}
			seen = append(seen, e.Reason+": "+e.Note)
			if e.Reason == reason && !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(e.Note, p) }) {
				return e
			}
		}
	}
	t.Fatalf("no %s event on %s %s naming %q; seen %q", reason, kind, name, parts, seen)
	return eventsv1.Event{}
}

func TestPolicyGatesAndClearsWithEvents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	node := "gate-node-1"
	other := corev1.Taint{Key: "example.com/maintenance", Value: "true", Effect: corev1.TaintEffectPreferNoSchedule}
	policy := builders.MakeQuantGatePolicy("fp8-gate-1", "fp8-current-scaling").Label(true).Taint("").Obj()
	create(t, builders.MakeNode(node).Label("kquant.dev/fp8", "native").Obj())
	n := &corev1.Node{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = []corev1.Taint{other}
	if err := c.Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	policyJob(t, policy, "fp8-gate-1-1-0")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	key := kquantv1alpha1.GateLabelPrefix + "fp8"
	gated := corev1.Taint{Key: key, Value: "failed", Effect: corev1.TaintEffectNoSchedule}

	// GPU 1 passes, GPU 0 fails: the node is gated, label and the default
	// NoSchedule taint, the policy recorded as the key's owner.
	finish(t, managerNS, "fp8-gate-1-1-0", "fp8-gate-1-1-0-0-0", node, 0, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictFail, t0)
	finish(t, managerNS, "fp8-gate-1-1-0", "fp8-gate-1-1-0-1-0", node, 1, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictPass, t0)
	waitNode(t, node, nodeGate{labels: map[string]string{key: "failed"}, taints: []corev1.Taint{other, gated}, owners: map[string]string{key: policy.Name}})
	set := waitEvent(t, "Node", node, gatedomain.ReasonGateSet, policy.Name, key, builders.GPUUUID(node, 0), "fp8-gate-1-1-0-0-0")
	if set.Related == nil || set.Related.Kind != "QuantGatePolicy" || set.Related.Name != policy.Name {
		t.Errorf("GateSet event related to %+v, want the policy", set.Related)
	}

	// A gate label removed by hand while the failure stands comes back.
	if err := c.Get(t.Context(), types.NamespacedName{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	delete(n.Labels, key)
	if err := c.Update(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	waitNode(t, node, nodeGate{labels: map[string]string{key: "failed"}, taints: []corev1.Taint{other, gated}, owners: map[string]string{key: policy.Name}})

	// A later pass on GPU 0 clears label and taint, and keeps the others' taint.
	finish(t, managerNS, "fp8-gate-1-1-0", "fp8-gate-1-1-0-0-1", node, 0, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictPass, t0.Add(time.Minute))
	waitNode(t, node, nodeGate{labels: map[string]string{}, taints: []corev1.Taint{other}, owners: map[string]string{}})
	waitEvent(t, "Node", node, gatedomain.ReasonGateCleared, policy.Name, key, "fp8-gate-1-1-0-0-1")
}

func TestTenantRunsNeverGate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	ns, node := "tenant-1", "gate-node-2"
	policy := builders.MakeQuantGatePolicy("fp8-gate-2", "fp8-current-scaling").Obj()
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, builders.MakeNode(node).Obj())
	policyJob(t, policy, "fp8-gate-2-1-0")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	key := kquantv1alpha1.GateLabelPrefix + "fp8"

	// A tenant's own job, and one that claims the policy as its controller
	// (a forged owner reference: it is not in the manager's namespace), fail
	// on GPU 0; a job in the manager's namespace that no policy controls
	// fails too. None of them gates.
	create(t, builders.MakeQuantJob("mine", ns).ClusterRecipe("fp8-current-scaling").Obj(),
		builders.MakeQuantJob("forged", ns).ClusterRecipe("fp8-current-scaling").ControlledBy(policy).Obj(),
		builders.MakeQuantJob("orphan", managerNS).ClusterRecipe("fp8-current-scaling").Obj())
	finish(t, ns, "mine", "mine-0-0", node, 0, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictFail, t0)
	finish(t, ns, "forged", "forged-0-0", node, 0, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictFail, t0)
	finish(t, managerNS, "orphan", "orphan-0-0", node, 0, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictFail, t0)
	// The policy's own failure, later, gates: the state after it shows that
	// the three failures before it were handled and counted for nothing
	// (the GateSet event names the policy's run, not theirs).
	finish(t, managerNS, "fp8-gate-2-1-0", "fp8-gate-2-1-0-1-0", node, 1, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictFail, t0.Add(time.Minute))
	waitNode(t, node, nodeGate{labels: map[string]string{key: "failed"}, owners: map[string]string{key: policy.Name}})
	waitEvent(t, "Node", node, gatedomain.ReasonGateSet, "fp8-gate-2-1-0-1-0")

	// A tenant's later pass, forged owner and all, does not clear it.
	finish(t, ns, "forged", "forged-1-0", node, 1, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictPass, t0.Add(2*time.Minute))
	finish(t, ns, "mine", "mine-1-0", node, 1, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictPass, t0.Add(2*time.Minute))
	// Only the policy's own pass does; GPU 0 never failed for the policy.
	finish(t, managerNS, "fp8-gate-2-1-0", "fp8-gate-2-1-0-1-1", node, 1, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictPass, t0.Add(3*time.Minute))
	waitNode(t, node, nodeGate{labels: map[string]string{}, owners: map[string]string{}})
	waitEvent(t, "Node", node, gatedomain.ReasonGateCleared, "fp8-gate-2-1-0-1-1")
}

func TestPersonsLabelIsNeverRemovedOrTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	node := "gate-node-3"
	key := kquantv1alpha1.GateLabelPrefix + "fp8"
	mx := kquantv1alpha1.GateLabelPrefix + "mxfp8"
	// A person gated fp8 by hand; the policy validates fp8 and mxfp8.
	create(t, builders.MakeNode(node).Label(key, "failed").Obj())
	policy := builders.MakeQuantGatePolicy("gate-3", "fp8-current-scaling").Obj()
	policyJob(t, policy, "gate-3-1-0")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)

	// The policy's fp8 failure is blocked: the key is the person's.
	finish(t, managerNS, "gate-3-1-0", "gate-3-1-0-0-0", node, 0, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictFail, t0)
	waitEvent(t, "QuantGatePolicy", policy.Name, gatedomain.ReasonGateBlocked, key, node, "someone else")
	// Its mxfp8 failure gates mxfp8, which nobody held: the write after the
	// block shows the fp8 label is still the person's, unrecorded.
	finish(t, managerNS, "gate-3-1-0", "gate-3-1-0-1-0", node, 1, kquantv1alpha1.SchemeMXFP8BlockScaling, kquantv1alpha1.VerdictFail, t0)
	waitNode(t, node, nodeGate{labels: map[string]string{key: "failed", mx: "failed"}, owners: map[string]string{mx: policy.Name}})
	// A pass of fp8 clears nothing of the person's.
	finish(t, managerNS, "gate-3-1-0", "gate-3-1-0-0-1", node, 0, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictPass, t0.Add(time.Minute))
	finish(t, managerNS, "gate-3-1-0", "gate-3-1-0-1-1", node, 1, kquantv1alpha1.SchemeMXFP8BlockScaling, kquantv1alpha1.VerdictPass, t0.Add(time.Minute))
	waitNode(t, node, nodeGate{labels: map[string]string{key: "failed"}, owners: map[string]string{}})
}

func TestDeletedPolicyLiftsItsGates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	node := "gate-node-4"
	key := kquantv1alpha1.GateLabelPrefix + "nvfp4"
	create(t, builders.MakeNode(node).Obj())
	policy := builders.MakeQuantGatePolicy("gate-4", "nvfp4").Label(false).Taint(corev1.TaintEffectNoExecute).Obj()
	policyJob(t, policy, "gate-4-1-0")
	finish(t, managerNS, "gate-4-1-0", "gate-4-1-0-0-0", node, 0, kquantv1alpha1.SchemeNVFP4BlockScaling, kquantv1alpha1.VerdictFail, time.Now().Add(-time.Hour))
	waitNode(t, node, nodeGate{labels: map[string]string{}, taints: []corev1.Taint{{Key: key, Value: "failed", Effect: corev1.TaintEffectNoExecute}}, owners: map[string]string{key: policy.Name}})

	if err := c.Delete(t.Context(), policy); err != nil {
		t.Fatal(err)
	}
	waitNode(t, node, nodeGate{labels: map[string]string{}, owners: map[string]string{}})
	waitEvent(t, "Node", node, gatedomain.ReasonGateCleared, fmt.Sprintf("policy %s is gone", policy.Name))
}
