package gate_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/gate"
	"github.com/kquant/kquant/controllers/indexer"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

var c client.Client

// TestMain starts a control plane and a manager with the run indexes and the
// gate controller only: nothing else writes Nodes or runs.
func TestMain(m *testing.M) {
	testenv.Main(m, func(ctx context.Context, env *testenv.Env, mgr manager.Manager) error {
		c = env.Client
		if err := indexer.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
		return gate.New(mgr.GetClient(), mgr.GetAPIReader()).SetupWithManager(mgr)
	})
}

// finish creates a finished run of job on GPU index of node with verdict v,
// completed at t.
func finish(t *testing.T, ns, job, name, node string, index int, scheme kquantv1alpha1.Scheme, v kquantv1alpha1.Verdict, at time.Time) {
	t.Helper()
	run := builders.MakeQuantRun(name, ns, job).Bound(node, index).Scheme(scheme).Results("100", "10", "2", "30", v).Completed(at).Obj()
	if err := testenv.CreateWithStatus(t.Context(), c, run); err != nil {
		t.Fatal(err)
	}
}

type nodeGate struct {
	labels map[string]string
	taints []corev1.Taint
}

// waitNode waits until node's gate labels and taints are want.
func waitNode(t *testing.T, node string, want nodeGate) {
	t.Helper()
	var got nodeGate
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		n := &corev1.Node{}
		if err := c.Get(t.Context(), types.NamespacedName{Name: node}, n); err != nil {
			t.Fatal(err)
		}
		got = nodeGate{labels: map[string]string{}, taints: nil}
		for k, v := range n.Labels {
			if len(k) > len(kquantv1alpha1.GateLabelPrefix) && k[:len(kquantv1alpha1.GateLabelPrefix)] == kquantv1alpha1.GateLabelPrefix || k == "kquant.dev/fp8" {
				got.labels[k] = v
			}
		}
		got.taints = n.Spec.Taints
		if fmt.Sprint(got.labels) == fmt.Sprint(want.labels) && slices.EqualFunc(got.taints, want.taints, func(a, b corev1.Taint) bool {
			return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
		}) {
			return
		}
	}
	t.Fatalf("node %s: got labels %v taints %v, want labels %v taints %v", node, got.labels, got.taints, want.labels, want.taints)
}

func TestGateLabelsTaintsAndClears(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	ctx := t.Context()
	ns, node := "gate-1", "gate-node-1"
	other := corev1.Taint{Key: "example.com/maintenance", Value: "true", Effect: corev1.TaintEffectPreferNoSchedule}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		// A support label of package nodelabels and someone else's taint: the
		// gate must leave both alone.
		builders.MakeNode(node).Label("kquant.dev/fp8", "native").Obj(),
		builders.MakeQuantJob("fails", ns).Recipe("fp8").Gate(true, corev1.TaintEffectNoSchedule).Obj(),
		builders.MakeQuantJob("ungated", ns).Recipe("fp8").Obj(),
		builders.MakeQuantJob("passes", ns).Recipe("fp8").Gate(true, "").Obj(),
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	n := &corev1.Node{}
	if err := c.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = []corev1.Taint{other}
	if err := c.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	key := kquantv1alpha1.GateLabelPrefix + "fp8"
	gated := corev1.Taint{Key: key, Value: "failed", Effect: corev1.TaintEffectNoSchedule}

	// A failing run of an ungated job changes nothing.
	finish(t, ns, "ungated", "ungated-0-0", node, 0, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictFail, t0)
	// GPU 1 passes, GPU 0 fails: the node is gated, label and taint.
	finish(t, ns, "fails", "fails-0-0", node, 0, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictFail, t0.Add(time.Minute))
	finish(t, ns, "fails", "fails-1-0", node, 1, kquantv1alpha1.SchemeDelayedScaling, kquantv1alpha1.VerdictPass, t0.Add(time.Minute))
	waitNode(t, node, nodeGate{labels: map[string]string{"kquant.dev/fp8": "native", key: "failed"}, taints: []corev1.Taint{other, gated}})

	// A gate label removed by hand while the failure stands comes back.
	if err := c.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	delete(n.Labels, key)
	if err := c.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	waitNode(t, node, nodeGate{labels: map[string]string{"kquant.dev/fp8": "native", key: "failed"}, taints: []corev1.Taint{other, gated}})

	// A later pass of another family (mxfp8) does not clear fp8's gate.
	finish(t, ns, "passes", "passes-mx-0-0", node, 0, kquantv1alpha1.SchemeMXFP8BlockScaling, kquantv1alpha1.VerdictPass, t0.Add(2*time.Minute))
	waitNode(t, node, nodeGate{labels: map[string]string{"kquant.dev/fp8": "native", key: "failed"}, taints: []corev1.Taint{other, gated}})

	// A later gated pass on GPU 0 clears both, and keeps the others' taint.
	finish(t, ns, "passes", "passes-0-0", node, 0, kquantv1alpha1.SchemeFloat8CurrentScaling, kquantv1alpha1.VerdictPass, t0.Add(3*time.Minute))
	waitNode(t, node, nodeGate{labels: map[string]string{"kquant.dev/fp8": "native"}, taints: []corev1.Taint{other}})
}
