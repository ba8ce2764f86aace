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
)

// ReasonConditionBlocked (an Event on the policy): a condition of the gate's
// type is on the node without kquant's record, so it is someone else's and
// the policy leaves it alone.
const ReasonConditionBlocked = "ConditionBlocked"

// ReasonConditionChanged: a gate's Node condition was set, changed status or
// reason, or was removed (an Event on the Node).
const ReasonConditionChanged = "ConditionChanged"

// ConditionType is the Node condition of family's gate,
// kquant.dev/<Family>Validated: the family's first word is an acronym and is
// upper-cased (fp8 → FP8Validated, fp8-block → FP8BlockValidated, nvfp4 →
// NVFP4Validated).
func ConditionType(family string) corev1.NodeConditionType {
	words := strings.Split(family, "-")
	for i, w := range words {
		if i == 0 {
			words[i] = strings.ToUpper(w)
		} else if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return corev1.NodeConditionType(kquantv1alpha1.NodeConditionPrefix + strings.Join(words, "") + kquantv1alpha1.NodeConditionSuffix)
}

// ConditionPlan is what to write of a Node's gate conditions.
type ConditionPlan struct {
	// Conditions are every condition the gate sets on the node, sorted by
	// type; those it set before (the old record) and no longer wants go.
	Conditions []corev1.NodeCondition
	// Record is the node's new condition record (type → policy).
	Record gateowners.Conditions
	// Blocked are conditions a policy would set but someone else holds.
	Blocked []Change
	// RequeueAfter is when the first True condition goes stale; zero for never.
	RequeueAfter time.Duration
}

// PlanConditions decides the gate conditions of one node, one per family:
//   - the family's condition is decided by the policy that holds the gate key
//     when that policy sets conditions, else by the oldest live policy of
//     the family that does; with none, kquant sets no condition of that type;
//   - False while the deciding policy's latest run on some GPU failed (or it
//     holds the key, its runs gone): the run's verdict reason, a message
//     naming recipe, GPU and run;
//   - True when its latest runs passed on every GPU, with that run's time as
//     the heartbeat; Unknown (ValidationStale) once the heartbeat is older
//     than the policy's period;
//   - with no runs of the policy left, the condition kquant set stays, but a
//     True one still goes stale;
//   - a condition of the type that the record does not give to kquant is
//     someone else's: left alone, and the policy is Blocked.
//
// owners is the node's key record after PlanNode.
func PlanConditions(existing []corev1.NodeCondition, record gateowners.Conditions, owners gateowners.Owners,
	policies map[string]Policy, findings map[PolicyFamily]Finding, now time.Time) ConditionPlan {
	current := map[string]corev1.NodeCondition{}
	for _, c := range existing {
		current[string(c.Type)] = c
	}
	families := map[string]bool{}
	for _, pol := range policies {
		if pol.Family != "" {
			families[pol.Family] = true
		}
	}
	for pf := range findings {
		families[pf.Family] = true
	}
	for key := range owners {
		families[strings.TrimPrefix(key, kquantv1alpha1.GateLabelPrefix)] = true
	}
	plan := ConditionPlan{Record: gateowners.Conditions{}}
	var stale time.Time
	for _, family := range slices.Sorted(maps.Keys(families)) {
		pol, ok := decider(family, owners, policies, findings)
		if !ok {
			continue
		}
		typ := string(ConditionType(family))
		old, present := current[typ]
		if _, ours := record[typ]; present && !ours {
			plan.Blocked = append(plan.Blocked, Change{Reason: ReasonConditionBlocked, Key: typ, Policy: pol.Name,
				Message: fmt.Sprintf("policy %s would set the Node condition %s, but it was set by someone else (no record in %s): left as it is",
					pol.Name, typ, kquantv1alpha1.AnnotationGateConditions)})
			continue
		}
		var oldPtr *corev1.NodeCondition
		if present {
			oldPtr = &old
		}
		c, ok := nodeCondition(typ, pol, owners[Key(family)], findings[PolicyFamily{pol.Name, family}], oldPtr, now)
		if !ok {
			continue
		}
		plan.Conditions = append(plan.Conditions, c)
		plan.Record[typ] = pol.Name
		if c.Status == corev1.ConditionTrue && pol.Period > 0 {
			if at := c.LastHeartbeatTime.Add(pol.Period); stale.IsZero() || at.Before(stale) {
				stale = at
			}
		}
	}
	if !stale.IsZero() {
		plan.RequeueAfter = max(stale.Sub(now), time.Second)
	}
	return plan
}

// decider is the policy whose runs decide family's condition: the key's
// holder when it sets conditions, else the oldest live policy of the family
// that does (one whose recipe is missing counts when it has runs of the
// family, as it does for a gate key).
func decider(family string, owners gateowners.Owners, policies map[string]Policy, findings map[PolicyFamily]Finding) (Policy, bool) {
	if o, held := owners[Key(family)]; held {
		if pol, live := policies[o.Policy]; live && pol.Actions.ConditionEnabled() {
			return pol, true
		}
	}
	var out []Policy
	for _, pol := range policies {
		_, ran := findings[PolicyFamily{pol.Name, family}]
		if pol.Actions.ConditionEnabled() && (pol.Family == family || (pol.Family == "" && ran)) {
			out = append(out, pol)
		}
	}
	if len(out) == 0 {
		return Policy{}, false
	}
	return slices.MinFunc(out, func(a, b Policy) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Name, b.Name))
	}), true
}

// nodeCondition is the condition typ of policy pol: from its finding f when
// it has runs on the node, from the key it holds, or from old (the condition
// as it is) when its runs are gone; false when there is nothing to say.
func nodeCondition(typ string, pol Policy, owner gateowners.Owner, f Finding, old *corev1.NodeCondition, now time.Time) (corev1.NodeCondition, bool) {
	held := owner.Policy == pol.Name
	seen := f.Run != ""
	c := corev1.NodeCondition{Type: corev1.NodeConditionType(typ)}
	switch {
	case seen && f.Failed:
		c.Status, c.Reason = corev1.ConditionFalse, cmp.Or(f.Reason, kquantv1alpha1.NodeReasonValidationFailed)
		c.LastHeartbeatTime = metav1.NewTime(f.Completed)
		c.Message = fmt.Sprintf("recipe %s: GPU %s failed validation in run %s (policy %s)", pol.Recipe, f.GPU, f.Run, pol.Name)
	case seen:
		c.Status, c.Reason = corev1.ConditionTrue, cmp.Or(f.Reason, kquantv1alpha1.NodeReasonValidationPassed)
		c.LastHeartbeatTime = metav1.NewTime(f.Completed)
		c.Message = fmt.Sprintf("recipe %s: every GPU passed validation, the latest GPU %s in run %s (policy %s)", pol.Recipe, f.GPU, f.Run, pol.Name)
	case old != nil && old.Status != corev1.ConditionTrue:
		return *old, true // a failure stands, a stale one stays stale
	case old != nil:
		c = *old
	case held:
		c.Status, c.Reason = corev1.ConditionFalse, kquantv1alpha1.NodeReasonValidationFailed
		c.LastHeartbeatTime = owner.Since
		c.Message = fmt.Sprintf("recipe %s: GPU %s failed validation in run %s (policy %s)", pol.Recipe, owner.GPU, owner.Run, pol.Name)
	default:
		return c, false
	}
	if c.Status == corev1.ConditionTrue && pol.Period > 0 && !c.LastHeartbeatTime.Add(pol.Period).After(now) {
		last := c.LastHeartbeatTime.UTC().Format(time.RFC3339)
		if seen {
			last = fmt.Sprintf("GPU %s in run %s at %s", f.GPU, f.Run, last)
		}
		c.Status, c.Reason = corev1.ConditionUnknown, kquantv1alpha1.NodeReasonValidationStale
		c.Message = fmt.Sprintf("recipe %s: not validated within the policy's period of %s; the last pass was %s (policy %s)",
			pol.Recipe, pol.Period, last, pol.Name)
	}
	c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
	if old != nil && old.Status == c.Status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	return c, true
}

// ConditionsEqual reports whether the node's kquant conditions of record are
// want, ignoring nothing: a changed heartbeat is a write too.
func ConditionsEqual(existing []corev1.NodeCondition, record gateowners.Conditions, want []corev1.NodeCondition) bool {
	var have []corev1.NodeCondition
	for _, c := range existing {
		if _, ours := record[string(c.Type)]; ours {
			have = append(have, c)
		}
	}
	slices.SortFunc(have, func(a, b corev1.NodeCondition) int { return strings.Compare(string(a.Type), string(b.Type)) })
	return slices.EqualFunc(have, want, func(a, b corev1.NodeCondition) bool {
		return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
			a.LastHeartbeatTime.Equal(&b.LastHeartbeatTime) && a.LastTransitionTime.Equal(&b.LastTransitionTime)
	})
}

// ConditionChanges are the Events of a condition write: a condition set, or
// changed in status or reason (a new heartbeat alone is no Event), or one
// kquant set before removed.
func ConditionChanges(existing []corev1.NodeCondition, record gateowners.Conditions, plan ConditionPlan) []Change {
	old := map[string]corev1.NodeCondition{}
	for _, c := range existing {
		if _, ours := record[string(c.Type)]; ours {
			old[string(c.Type)] = c
		}
	}
	var out []Change
	for _, c := range plan.Conditions {
		typ := string(c.Type)
		if o, had := old[typ]; !had || o.Status != c.Status || o.Reason != c.Reason {
			out = append(out, Change{Reason: ReasonConditionChanged, Key: typ, Policy: plan.Record[typ],
				Message: fmt.Sprintf("Node condition %s is %s (%s): %s", typ, c.Status, c.Reason, c.Message)})
		}
		delete(old, typ)
	}
	for _, typ := range slices.Sorted(maps.Keys(old)) {
		out = append(out, Change{Reason: ReasonConditionChanged, Key: typ, Policy: record[typ],
			Message: fmt.Sprintf("Node condition %s removed: no live policy of its family sets it", typ)})
	}
	return out
}
