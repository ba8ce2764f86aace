// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gatepolicy

import (
	"cmp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
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
