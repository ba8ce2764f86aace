//go:build cluster

package cluster

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

// gateKey is the gate label and taint of the fp8 family (the recipe
// fp8-current-scaling).
const gateKey = v1alpha1.GateLabelPrefix + "fp8"

// gatesKeepTrainingAway forces a validation to fail through a tolerance no GPU
// meets (an SNR of 150 dB): the node gets the gate label and taint, and a
// training pod that selects nodes without the label stays Pending. A passing
// validation (whose run pods tolerate the gate) clears both, and the training
// pod is scheduled.
func gatesKeepTrainingAway(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "e2e-gates")
	cl.apply(t, ns, nil, filepath.Join(testenv.RepoRoot(), "recipes"))
	failing := builders.MakeQuantJob("gate-fails", ns).Recipe("fp8-current-scaling").EachGPU().
		MinSNRdB("150").Gate(true, corev1.TaintEffectNoSchedule).Obj()
	if err := cl.c.Create(t.Context(), failing); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Minute, "node "+node+" gated", func() error {
		return cl.nodeGate(t, true)
	})
	t.Logf("after the failing validation:\n%s", cl.kubectl(t, "get", "node", node, "-L", gateKey, "-o", "custom-columns=NAME:.metadata.name,TAINTS:.spec.taints[*].key"))

	training := trainingPod(ns)
	if err := cl.c.Create(t.Context(), training); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "training pod unschedulable", func() error {
		return cl.podScheduled(t, training, corev1.ConditionFalse)
	})

	passing := builders.MakeQuantJob("gate-passes", ns).Recipe("fp8-current-scaling").EachGPU().
		MinSNRdB("1").Gate(true, corev1.TaintEffectNoSchedule).Obj()
	if err := cl.c.Create(t.Context(), passing); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Minute, "node "+node+" gate cleared", func() error {
		return cl.nodeGate(t, false)
	})
	eventually(t, 2*time.Minute, "training pod scheduled", func() error {
		return cl.podScheduled(t, training, corev1.ConditionTrue)
	})
	cl.kubectl(t, "delete", "namespace", ns, "--wait=false")
}

// nodeGate checks that the node has (or has not) the fp8 gate label and taint.
func (cl *cluster) nodeGate(t *testing.T, gated bool) error {
	n := &corev1.Node{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Name: node}, n); err != nil {
		return err
	}
	_, labelled := n.Labels[gateKey]
	tainted := slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool {
		return tt.Key == gateKey && tt.Effect == corev1.TaintEffectNoSchedule
	})
	if labelled != gated || tainted != gated {
		return fmt.Errorf("label %t, taint %t, want %t", labelled, tainted, gated)
	}
	return nil
}

// trainingPod is a pod that, as a training job selecting FP8 nodes would,
// requires a node without a failed FP8 validation.
func trainingPod(ns string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "training", Namespace: ns},
		Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: gateKey, Operator: corev1.NodeSelectorOpDoesNotExist}},
				}}},
			}},
			Containers: []corev1.Container{{Name: "train", Image: "kquant.local/pause:3.10", ImagePullPolicy: corev1.PullNever}},
		},
	}
}

// podScheduled checks the pod's PodScheduled condition.
func (cl *cluster) podScheduled(t *testing.T, pod *corev1.Pod, want corev1.ConditionStatus) error {
	p := &corev1.Pod{}
	if err := cl.c.Get(t.Context(), client.ObjectKeyFromObject(pod), p); err != nil {
		return err
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			if c.Status == want {
				return nil
			}
			return fmt.Errorf("PodScheduled %s (%s: %s)", c.Status, c.Reason, c.Message)
		}
	}
	return fmt.Errorf("no PodScheduled condition yet")
}
