// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/gateowners"
	"github.com/kquant/kquant/domain/supportlabels"
)

// Event reasons of gate changes; each is recorded on the Node (GateBlocked,
// which changes nothing, on the policy).
const (
	// ReasonGateSet: a policy claimed a free key and set its marks.
	ReasonGateSet = "GateSet"
	// ReasonGateCleared: a policy removed its marks (its validation passed,
	// or the policy was deleted).
	ReasonGateCleared = "GateCleared"
	// ReasonGateUpdated: a policy changed the marks of a key it holds (its
	// actions changed, or a mark removed by hand was put back).
	ReasonGateUpdated = "GateUpdated"
	// ReasonGateBlocked: a policy's validation failed but the key is held by
	// another policy or was set by someone else; nothing changed.
	ReasonGateBlocked = "GateBlocked"
)

// Observation is one finished run of a gate policy's validation on the node.
type Observation struct {
	// Policy is the QuantGatePolicy that controls the run's job.
	Policy string
	// Family is the run's recipe family (fp8, mxfp8, ...).
	Family string
	// GPU is the GPU's UUID.
	GPU string
	// Completed is when the run finished; the latest run per GPU counts.
	Completed time.Time
	// Run is the run's name, a tie-breaker for equal completion times.
	Run string
	// Verdict is the run's verdict, and Reason its stable reason code.
	Verdict kquantv1alpha1.Verdict
	Reason  string
}

// PolicyFamily names one policy's verdicts on one family.
type PolicyFamily struct{ Policy, Family string }

// Finding is what one policy's latest runs of a family on a node say.
type Finding struct {
	// Failed is true when the latest run on some GPU failed.
	Failed bool
	// GPU and Run are the cause: the latest failing run when Failed, the
	// latest passing run otherwise; Reason is that run's verdict reason and
	// Completed when it finished.
	GPU, Run, Reason string
	Completed        time.Time
}

// Decide returns, per policy and family with a Pass, Warn or Fail
// observation, whether the latest such run of some GPU failed. Each policy is
// judged on its own runs only: one policy's pass never clears another's
// failure. Skip verdicts say nothing about numerics and are ignored.
func Decide(obs []Observation) map[PolicyFamily]Finding {
	type key struct {
		PolicyFamily
		gpu string
	}
	latest := map[key]Observation{}
	for _, o := range obs {
		switch o.Verdict {
		case kquantv1alpha1.VerdictPass, kquantv1alpha1.VerdictWarn, kquantv1alpha1.VerdictFail:
		default:
			continue
		}
		k := key{PolicyFamily{o.Policy, o.Family}, o.GPU}
		if cur, ok := latest[k]; !ok || later(o, cur) {
			latest[k] = o
		}
	}
	// The cause is the latest failing run, or, with none failing, the latest run.
	causes := map[PolicyFamily]Observation{}
	for k, o := range latest {
		failed := o.Verdict == kquantv1alpha1.VerdictFail
		cur, seen := causes[k.PolicyFamily]
		curFailed := seen && cur.Verdict == kquantv1alpha1.VerdictFail
		if !seen || (failed && !curFailed) || (failed == curFailed && later(o, cur)) {
			causes[k.PolicyFamily] = o
		}
	}
	out := make(map[PolicyFamily]Finding, len(causes))
	for pf, o := range causes {
		out[pf] = Finding{Failed: o.Verdict == kquantv1alpha1.VerdictFail, GPU: o.GPU, Run: o.Run, Reason: o.Reason, Completed: o.Completed}
	}
	return out
}

// later orders observations by completion time, then run name.
func later(a, b Observation) bool {
	return a.Completed.After(b.Completed) || (a.Completed.Equal(b.Completed) && a.Run > b.Run)
}

// Tolerations tolerate every gate taint, of any effect: kquant's run pods
// carry them, because a validation must be able to run on a node that an
// earlier one gated, or the gate could never clear.
func Tolerations() []corev1.Toleration {
	var out []corev1.Toleration
	for _, f := range supportlabels.Families() {
		out = append(out, corev1.Toleration{Key: Key(f), Operator: corev1.TolerationOpExists})
	}
	return out
}

// Key is the label and taint key of family's gate.
func Key(family string) string { return kquantv1alpha1.GateLabelPrefix + family }

// Policy is what a plan needs of a live QuantGatePolicy.
type Policy struct {
	Name string
	// Created orders policies: on a free key the oldest failing one wins.
	Created time.Time
	Actions kquantv1alpha1.GateActions
	// Family is the family of the policy's recipe now; empty when unknown
	// (the recipe is missing). A key of another family that the policy
	// holds is released: its validation no longer covers it.
	Family string
	// Recipe is the ClusterQuantRecipe the policy validates, for messages.
	Recipe string
	// Period is spec.period: a node not passed within it has a stale
	// condition. Zero (validated once per generation) never goes stale.
	Period time.Duration
}

// Node is what a plan reads of a Node.
type Node struct {
	Labels map[string]string
	Taints []corev1.Taint
	Owners gateowners.Owners
}

// Change is one gate event, for the Node's (or, GateBlocked, the policy's)
// Events and the logs.
type Change struct {
	// Reason is one of the Reason* constants.
	Reason string
	// Key, Policy, GPU and Run say which gate, whose, and what caused it.
	Key, Policy, GPU, Run string
	// Message is the Event's note.
	Message string
}

// Plan is what to write to a Node so that its gates match the findings.
type Plan struct {
	// Labels are the label changes of a merge patch: "failed", or nil to remove.
	Labels map[string]any
	// Taints is the node's whole new taint list.
	Taints []corev1.Taint
	// Owners is the node's new ownership record.
	Owners gateowners.Owners
	// Changes are the node's gate changes; Blocked the claims not made.
	Changes, Blocked []Change
	// Write is true when the Node must be patched (a mark or the record changed).
	Write bool
}

// PlanNode decides the gates of one node:
//   - a key recorded as a live policy's keeps that owner until the policy's
//     latest runs of the family pass on every GPU, then the owner removes
//     exactly the marks its record says it set; a deleted policy's marks go,
//     and so do those of a family the policy no longer validates;
//   - while it holds a key, an owner's marks follow its actions (and come
//     back when removed by hand: the failure stands);
//   - a free key is claimed by the oldest policy whose runs failed, unless a
//     label or taint of that key exists without a record (a person's, or
//     another tool's): then nothing is touched and the policies are Blocked.
//
// Keys neither recorded nor failed are left alone, so a node whose runs are
// gone keeps its gates: only a passing validation clears them.
func PlanNode(node Node, policies map[string]Policy, findings map[PolicyFamily]Finding, now time.Time) Plan {
	p := Plan{Labels: map[string]any{}, Taints: slices.Clone(node.Taints), Owners: maps.Clone(node.Owners)}
	if p.Owners == nil {
		p.Owners = gateowners.Owners{}
	}
	keys := map[string]bool{}
	for k := range node.Owners {
		keys[k] = true
	}
	for pf := range findings {
		keys[Key(pf.Family)] = true
	}
	for _, key := range slices.Sorted(maps.Keys(keys)) {
		family := strings.TrimPrefix(key, kquantv1alpha1.GateLabelPrefix)
		released := ""
		if owner, owned := node.Owners[key]; owned {
			pol, live := policies[owner.Policy]
			f, seen := findings[PolicyFamily{owner.Policy, family}]
			switch {
			case !live:
				p.release(node, key, owner, Change{Reason: ReasonGateCleared,
					Message: fmt.Sprintf("%s cleared: policy %s is gone", key, owner.Policy)})
				released = owner.Policy
			case pol.Family != "" && pol.Family != family:
				p.release(node, key, owner, Change{Reason: ReasonGateCleared,
					Message: fmt.Sprintf("policy %s cleared %s: it validates %s now", owner.Policy, key, pol.Family)})
				released = owner.Policy
			case seen && !f.Failed:
				p.release(node, key, owner, Change{Reason: ReasonGateCleared, GPU: f.GPU, Run: f.Run,
					Message: fmt.Sprintf("policy %s cleared %s: GPU %s passed in run %s", owner.Policy, key, f.GPU, f.Run)})
				released = owner.Policy
			default:
				p.follow(node, key, owner, pol.Actions)
				p.block(policies, findings, family, owner.Policy, "is held by policy "+owner.Policy)
				continue
			}
		}
		candidates := failing(policies, findings, family, released)
		if len(candidates) == 0 {
			continue
		}
		if p.marked(node, key) {
			p.block(policies, findings, family, released, "was set by someone else (no record in "+kquantv1alpha1.AnnotationGateOwners+")")
			continue
		}
		winner := candidates[0]
		f := findings[PolicyFamily{winner.Name, family}]
		owner := gateowners.Owner{Policy: winner.Name, GPU: f.GPU, Run: f.Run, Since: metav1.NewTime(now)}
		if winner.Actions.Label {
			p.Labels[key] = kquantv1alpha1.GateValueFailed
			owner.Label = true
		}
		if t := winner.Actions.Taint; t != nil {
			owner.Taint = effect(t)
			p.Taints = append(p.Taints, taint(key, owner.Taint))
		}
		p.Owners[key], p.Write = owner, true
		p.Changes = append(p.Changes, Change{Reason: ReasonGateSet, Key: key, Policy: winner.Name, GPU: f.GPU, Run: f.Run,
			Message: fmt.Sprintf("policy %s set %s (%s): GPU %s failed validation in run %s", winner.Name, key, marks(owner), f.GPU, f.Run)})
		p.block(policies, findings, family, winner.Name, "is held by policy "+winner.Name)
	}
	return p
}

// marked reports whether the node, as planned so far, has a label or taint
// of key.
func (p *Plan) marked(node Node, key string) bool {
	v, planned := p.Labels[key]
	_, had := node.Labels[key]
	return (planned && v != nil) || (!planned && had) ||
		slices.ContainsFunc(p.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// release removes the marks owner's record says it set, and the record.
func (p *Plan) release(node Node, key string, owner gateowners.Owner, c Change) {
	if _, ok := node.Labels[key]; owner.Label && ok {
		p.Labels[key] = nil
	}
	if owner.Taint != "" {
		p.Taints = slices.DeleteFunc(p.Taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == owner.Taint })
	}
	delete(p.Owners, key)
	c.Key, c.Policy = key, owner.Policy
	p.Changes, p.Write = append(p.Changes, c), true
}

// follow brings the marks of a key that owner holds to actions: a mark the
// actions no longer ask for goes, one they ask for is set (or put back after
// a hand removed it), unless someone else's mark stands in its place.
func (p *Plan) follow(node Node, key string, owner gateowners.Owner, actions kquantv1alpha1.GateActions) {
	next, changed := owner, false
	have, labelled := node.Labels[key]
	switch {
	case actions.Label && owner.Label && have != kquantv1alpha1.GateValueFailed,
		actions.Label && !owner.Label && !labelled:
		p.Labels[key], next.Label, changed = kquantv1alpha1.GateValueFailed, true, true
	case !actions.Label && owner.Label:
		if labelled {
			p.Labels[key] = nil
		}
		next.Label, changed = false, true
	}
	want := corev1.TaintEffect("")
	if actions.Taint != nil {
		want = effect(actions.Taint)
	}
	if owner.Taint != "" && owner.Taint != want {
		p.Taints = slices.DeleteFunc(p.Taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == owner.Taint })
		next.Taint, changed = "", true
	}
	if want != "" && !slices.ContainsFunc(p.Taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == want }) {
		p.Taints = append(p.Taints, taint(key, want))
		next.Taint, changed = want, true
	}
	if !changed {
		return
	}
	p.Owners[key], p.Write = next, true
	p.Changes = append(p.Changes, Change{Reason: ReasonGateUpdated, Key: key, Policy: owner.Policy, GPU: owner.GPU, Run: owner.Run,
		Message: fmt.Sprintf("policy %s holds %s with %s", owner.Policy, key, marks(next))})
}

// block records a Blocked change for every policy but except whose runs of
// family failed.
func (p *Plan) block(policies map[string]Policy, findings map[PolicyFamily]Finding, family, except, why string) {
	for _, pol := range failing(policies, findings, family, except) {
		f, key := findings[PolicyFamily{pol.Name, family}], Key(family)
		p.Blocked = append(p.Blocked, Change{Reason: ReasonGateBlocked, Key: key, Policy: pol.Name, GPU: f.GPU, Run: f.Run,
			Message: fmt.Sprintf("policy %s would gate %s (GPU %s failed validation in run %s), but the key %s: left as it is", pol.Name, key, f.GPU, f.Run, why)})
	}
}

// failing are the live policies but except whose runs of family failed,
// oldest first; a policy's old runs of a family it no longer validates do
// not count.
func failing(policies map[string]Policy, findings map[PolicyFamily]Finding, family, except string) []Policy {
	var out []Policy
	for name, pol := range policies {
		if name != except && (pol.Family == "" || pol.Family == family) && findings[PolicyFamily{name, family}].Failed {
			out = append(out, pol)
		}
	}
	slices.SortFunc(out, func(a, b Policy) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Name, b.Name))
	})
	return out
}

// effect is t's effect, NoSchedule when unset (the API's default).
func effect(t *kquantv1alpha1.GateTaint) corev1.TaintEffect {
	return cmp.Or(t.Effect, corev1.TaintEffectNoSchedule)
}

func taint(key string, e corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: kquantv1alpha1.GateValueFailed, Effect: e}
}

// marks says what an owner set, for messages.
func marks(o gateowners.Owner) string {
	var m []string
	if o.Label {
		m = append(m, "label")
	}
	if o.Taint != "" {
		m = append(m, "taint "+string(o.Taint))
	}
	if len(m) == 0 {
		return "no marks"
	}
	return strings.Join(m, ", ")
}
