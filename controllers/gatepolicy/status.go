// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gatepolicy

import (
	"cmp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/apply"
	ac "github.com/kquant/kquant/api/v1alpha1/applyconfiguration/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/gateowners"
)

// MaxGatedNodes is how many gates status.gatedNodes lists (the API's MaxItems);
// status.gatedCount counts them all.
const MaxGatedNodes = 1000

// GatedNodes are the gates that policy holds according to the nodes'
// ownership records, by node and family, at most MaxGatedNodes of them, and
// how many there are in all. A node whose record is unreadable lists nothing:
// package gate leaves such a node alone and says so in an Event.
func GatedNodes(policy string, nodes []metav1.PartialObjectMetadata) ([]kquantv1alpha1.GatedNode, int32) {
	var out []kquantv1alpha1.GatedNode
	for i := range nodes {
		owners, err := gateowners.Of(nodes[i].Annotations)
		if err != nil {
			continue
		}
		for _, key := range owners.Keys() {
			o := owners[key]
			if o.Policy != policy {
				continue
			}
			g := kquantv1alpha1.GatedNode{Node: nodes[i].Name, Family: strings.TrimPrefix(key, kquantv1alpha1.GateLabelPrefix), GPU: o.GPU, Run: o.Run}
			if !o.Since.IsZero() {
				g.Since = o.Since.DeepCopy()
			}
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b kquantv1alpha1.GatedNode) int {
		return cmp.Or(strings.Compare(a.Node, b.Node), strings.Compare(a.Family, b.Family))
	})
	count := int32(len(out))
	if len(out) > MaxGatedNodes {
		out = out[:MaxGatedNodes]
	}
	return out, count
}

// statusApply is status as the apply configuration of p's status, with p's
// resourceVersion as a precondition.
func statusApply(p *kquantv1alpha1.QuantGatePolicy, status *kquantv1alpha1.QuantGatePolicyStatus) *ac.QuantGatePolicyApplyConfiguration {
	st := ac.QuantGatePolicyStatus().
		WithObservedGeneration(status.ObservedGeneration).
		WithGatedCount(status.GatedCount)
	if status.JobNamespace != "" {
		st.WithJobNamespace(status.JobNamespace)
	}
	if status.CurrentJob != "" {
		st.WithCurrentJob(status.CurrentJob)
	}
	if status.LastJob != "" {
		st.WithLastJob(status.LastJob)
	}
	if t := apply.Time(status.LastValidationTime); t != nil {
		st.WithLastValidationTime(*t)
	}
	for _, g := range status.GatedNodes {
		gn := ac.GatedNode().WithNode(g.Node).WithFamily(g.Family)
		if g.GPU != "" {
			gn.WithGPU(g.GPU)
		}
		if g.Run != "" {
			gn.WithRun(g.Run)
		}
		if t := apply.Time(g.Since); t != nil {
			gn.WithSince(*t)
		}
		st.WithGatedNodes(gn)
	}
	for _, c := range apply.Conditions(status.Conditions) {
		st.WithConditions(&c)
	}
	obj := ac.QuantGatePolicy(p.Name).WithStatus(st)
	if p.ResourceVersion != "" {
		obj.WithResourceVersion(p.ResourceVersion)
	}
	return obj
}
