package gate

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/nodelabels"
)

// Observation is one finished run of a gated job on the node.
type Observation struct {
	// Family is the run's recipe family (fp8, mxfp8, ...).
	Family string
	// GPU is the GPU's UUID.
	GPU string
	// Completed is when the run finished; the latest run per GPU counts.
	Completed time.Time
	// Run is the run's name, a tie-breaker for equal completion times.
	Run string
	// Verdict is the run's verdict.
	Verdict kquantv1alpha1.Verdict
	// Gate is the gate of the run's job.
	Gate kquantv1alpha1.Gate
}

// State is the gate of one family on one node.
type State struct {
	// Failed is true when the latest run on some GPU failed.
	Failed bool
	// Label and Taint are what the failing runs' jobs ask for.
	Label bool
	Taint corev1.TaintEffect
}

// Decide returns the gate state of every family that has a Pass, Warn or Fail
// observation: Failed when the latest such run of some GPU failed. Families
// absent from the result are left as they are. Skip verdicts say nothing about
// numerics and are ignored.
func Decide(obs []Observation) map[string]State {
	type key struct{ family, gpu string }
	latest := map[key]Observation{}
	for _, o := range obs {
		switch o.Verdict {
		case kquantv1alpha1.VerdictPass, kquantv1alpha1.VerdictWarn, kquantv1alpha1.VerdictFail:
		default:
			continue
		}
		k := key{o.Family, o.GPU}
		cur, ok := latest[k]
		if !ok || o.Completed.After(cur.Completed) || (o.Completed.Equal(cur.Completed) && o.Run > cur.Run) {
			latest[k] = o
		}
	}
	out := map[string]State{}
	for k, o := range latest {
		s := out[k.family]
		if o.Verdict == kquantv1alpha1.VerdictFail {
			s.Failed = true
			s.Label = s.Label || o.Gate.Label
			if strength(o.Gate.Taint) > strength(s.Taint) {
				s.Taint = o.Gate.Taint
			}
		}
		out[k.family] = s
	}
	return out
}

// Tolerations tolerate every gate taint, of any effect: kquant's run pods
// carry them, because a validation must be able to run on a node that an
// earlier one gated, or the gate could never clear.
func Tolerations() []corev1.Toleration {
	var out []corev1.Toleration
	for _, f := range nodelabels.Families() {
		out = append(out, corev1.Toleration{Key: Key(f), Operator: corev1.TolerationOpExists})
	}
	return out
}

// Key is the label and taint key of family's gate.
func Key(family string) string { return kquantv1alpha1.GateLabelPrefix + family }

// Changes are the label changes (a value, or nil to remove) and the new taint
// list that bring a node's gates to states; changed is false when nothing
// changes. Labels and taints of other owners are kept as they are.
func Changes(labels map[string]string, taints []corev1.Taint, states map[string]State) (labelChanges map[string]any, newTaints []corev1.Taint, changed bool) {
	labelChanges = map[string]any{}
	newTaints = slices.Clone(taints)
	for _, family := range slices.Sorted(maps.Keys(states)) {
		s, key := states[family], Key(family)
		have, has := labels[key]
		switch {
		case s.Failed && s.Label && (!has || have != kquantv1alpha1.GateValueFailed):
			labelChanges[key] = kquantv1alpha1.GateValueFailed
		case (!s.Failed || !s.Label) && has:
			labelChanges[key] = nil
		}
		idx := slices.IndexFunc(newTaints, func(t corev1.Taint) bool { return t.Key == key })
		want := corev1.Taint{Key: key, Value: kquantv1alpha1.GateValueFailed, Effect: s.Taint}
		switch {
		case s.Failed && s.Taint != "" && idx < 0:
			newTaints = append(newTaints, want)
			changed = true
		case s.Failed && s.Taint != "" && (newTaints[idx].Effect != want.Effect || newTaints[idx].Value != want.Value):
			newTaints[idx] = want
			changed = true
		case (!s.Failed || s.Taint == "") && idx >= 0:
			newTaints = slices.Delete(newTaints, idx, idx+1)
			changed = true
		}
	}
	return labelChanges, newTaints, changed || len(labelChanges) > 0
}

// strength orders taint effects: the strongest one that failing jobs ask for wins.
func strength(e corev1.TaintEffect) int {
	return map[corev1.TaintEffect]int{corev1.TaintEffectPreferNoSchedule: 1, corev1.TaintEffectNoSchedule: 2, corev1.TaintEffectNoExecute: 3}[e]
}
