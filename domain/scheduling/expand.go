// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scheduling

import (
	"slices"
	"strings"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// Slot is one unit of work a job expands into. Its attempts (the first run and
// its retries) share the slot's target: none for AnyGPU, a node for EachNode,
// a GPU for EachGPU.
type Slot struct {
	Index      int
	TargetNode string
	TargetGPU  string
}

// Expand turns a placement policy and the eligible GPUs (by node, then index)
// into slots. Slots are numbered so that binding them in order spreads a job
// over nodes: EachGPU takes every node's first GPU, then every node's second,
// and so on, so that maxParallel runs land on as many nodes as possible.
func Expand(policy kquantv1alpha1.PlacementPolicy, eligible []GPU) []Slot {
	if len(eligible) == 0 {
		return nil
	}
	switch policy {
	case kquantv1alpha1.PlacementEachNode:
		var out []Slot
		for _, g := range eligible {
			if len(out) == 0 || out[len(out)-1].TargetNode != g.Node {
				out = append(out, Slot{Index: len(out), TargetNode: g.Node})
			}
		}
		return out
	case kquantv1alpha1.PlacementEachGPU:
		type ranked struct {
			GPU
			rank int
		}
		rs := make([]ranked, len(eligible))
		rank := 0
		for i, g := range eligible {
			if i > 0 && eligible[i-1].Node == g.Node {
				rank++
			} else {
				rank = 0
			}
			rs[i] = ranked{g, rank}
		}
		slices.SortStableFunc(rs, func(a, b ranked) int {
			if a.rank != b.rank {
				return a.rank - b.rank
			}
			return strings.Compare(a.Node, b.Node)
		})
		out := make([]Slot, len(rs))
		for i, r := range rs {
			out[i] = Slot{Index: i, TargetNode: r.Node, TargetGPU: r.UUID}
		}
		return out
	default:
		return []Slot{{Index: 0}}
	}
}
