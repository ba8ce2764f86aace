// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scheduling

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
)

// Reasons a node or GPU is not eligible. Messages say it in words; reasons are
// for code and tests.
const (
	ReasonDriverUpgrade        = "DriverUpgrade"
	ReasonNodeNotReady         = "NodeNotReady"
	ReasonLeaseExpired         = "LeaseExpired"
	ReasonNodeSelectorMismatch = "NodeSelectorMismatch"
	ReasonNoGPUs               = "NoGPUs"
	ReasonGPUUnhealthy         = "GPUUnhealthy"
	ReasonArchitecture         = "ArchitectureMismatch"
	ReasonComputeCapability    = "ComputeCapabilityTooLow"
	ReasonNotNative            = "NotNative"
	ReasonUnsupported          = "Unsupported"
	ReasonMIGNotIncluded       = "MIGNotIncluded"
	ReasonNoMIGDevices         = "NoMIGDevices"
)

// migOptIn is how a message names the opt-in to MIG slices.
const migOptIn = "spec.placement.migSlices: Include"

// NodeState is what the scheduler knows of one node: its agent's profile, the
// agent's Lease (nil when there is none) and the Node's labels (nil when the
// Node object does not exist, as for simulated agents).
type NodeState struct {
	Profile *kquantv1alpha1.GPUNodeProfile
	Lease   *coordinationv1.Lease
	Labels  map[string]string
}

// Name is the node's name (the profile's).
func (n *NodeState) Name() string { return n.Profile.Name }

// Requirements are what a job asks of a GPU.
type Requirements struct {
	Scheme kquantv1alpha1.Scheme
	// KernelGap is what the recipe asks for that no GPU's quantize kernels
	// implement yet (capability.KernelGap); "" when nothing.
	KernelGap     string
	RequireNative bool
	Architectures []kquantv1alpha1.Architecture
	MinCC         *capability.Version
	Selector      labels.Selector
	// MIGSlices admits the MIG devices of MIG-enabled GPUs, each as a unit
	// of work; without it such GPUs are not eligible at all.
	MIGSlices bool
}

// RequirementKey identifies what a job asks of the fleet, its recipe's scheme
// and kernel gap and its placement, for memoising evaluations: jobs with equal
// keys get equal Requirements. It is "" when the placement cannot be encoded
// (never memoise).
func RequirementKey(recipe *kquantv1alpha1.QuantRecipeSpec, p *kquantv1alpha1.Placement) string {
	data, err := json.Marshal(p)
	if err != nil {
		return ""
	}
	return string(recipe.Scheme) + "|" + capability.KernelGap(recipe) + "|" + string(data)
}

// NewRequirements turns a recipe and a job's placement into Requirements,
// failing on a placement that the API server let through but that cannot be
// evaluated (a malformed nodeSelector).
func NewRequirements(recipe *kquantv1alpha1.QuantRecipeSpec, p *kquantv1alpha1.Placement) (Requirements, error) {
	req := Requirements{Scheme: recipe.Scheme, KernelGap: capability.KernelGap(recipe),
		RequireNative: p.RequireNative, Architectures: p.Architectures, Selector: labels.Everything(),
		MIGSlices: p.MIGSlices == kquantv1alpha1.MIGSlicesInclude}
	if p.MinComputeCapability != "" {
		cc, err := capability.Parse(p.MinComputeCapability)
		if err != nil {
			return Requirements{}, fmt.Errorf("spec.placement.minComputeCapability: %w", err)
		}
		req.MinCC = &cc
	}
	if p.NodeSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(p.NodeSelector)
		if err != nil {
			return Requirements{}, fmt.Errorf("spec.placement.nodeSelector: %w", err)
		}
		req.Selector = sel
	}
	return req, nil
}

// GPU is one eligible unit of work: a whole GPU, or a MIG device of a
// MIG-enabled GPU (UUID the MIG device's, Index and Product its parent's).
type GPU struct {
	Node    string
	Index   int32
	UUID    string
	Product string
	// MIGProfile is a MIG device's profile ("1g.10gb"); empty for a whole GPU.
	MIGProfile string
}

// NodeResult is the verdict on one node: its eligible GPUs, or why it has none.
type NodeResult struct {
	Node    string
	GPUs    []GPU
	Reason  string
	Message string
	// MIGSkipped counts the MIG-enabled GPUs left out only because the job
	// does not include MIG slices.
	MIGSkipped int
}

// Eligible reports whether the node has an eligible GPU.
func (r *NodeResult) Eligible() bool { return len(r.GPUs) > 0 }

type nodePredicate func(n *NodeState, req *Requirements, now time.Time) (ok bool, reason, message string)

type gpuPredicate func(g *kquantv1alpha1.GPU, req *Requirements) (ok bool, reason, message string)

// The chains run in order and stop at the first rejection, so each node is
// counted once, under the first rule it breaks.
var (
	nodeChain = []nodePredicate{driverNotUpgrading, profileReady, leaseFresh, nodeSelectorMatches}
	gpuChain  = []gpuPredicate{gpuHealthy, architectureMatches, computeCapabilityAtLeast, recipeSupported, migIncluded}
)

// driverNotUpgrading keeps runs off a node whose GPU driver the GPU
// Operator is upgrading. It comes before profileReady, whose Ready is False
// then too, so that the message says why.
func driverNotUpgrading(n *NodeState, _ *Requirements, _ time.Time) (bool, string, string) {
	if !DriverUpgrading(n.Profile) {
		return true, "", ""
	}
	return false, ReasonDriverUpgrade, "are upgrading their GPU driver"
}

func profileReady(n *NodeState, _ *Requirements, _ time.Time) (bool, string, string) {
	if ProfileReady(n.Profile) {
		return true, "", ""
	}
	return false, ReasonNodeNotReady, "are not Ready"
}

func leaseFresh(n *NodeState, _ *Requirements, now time.Time) (bool, string, string) {
	if LeaseFresh(n.Lease, now) {
		return true, "", ""
	}
	return false, ReasonLeaseExpired, "have no fresh agent Lease"
}

func nodeSelectorMatches(n *NodeState, req *Requirements, _ time.Time) (bool, string, string) {
	if req.Selector == nil || req.Selector.Matches(labels.Set(n.Labels)) {
		return true, "", ""
	}
	return false, ReasonNodeSelectorMismatch, "do not match nodeSelector"
}

func gpuHealthy(g *kquantv1alpha1.GPU, _ *Requirements) (bool, string, string) {
	if g.Health != kquantv1alpha1.HealthUnhealthy {
		return true, "", ""
	}
	return false, ReasonGPUUnhealthy, "have no healthy GPU"
}

func architectureMatches(g *kquantv1alpha1.GPU, req *Requirements) (bool, string, string) {
	if len(req.Architectures) == 0 || slices.Contains(req.Architectures, g.Architecture) {
		return true, "", ""
	}
	names := make([]string, len(req.Architectures))
	for i, a := range req.Architectures {
		names[i] = string(a)
	}
	return false, ReasonArchitecture, "have no " + strings.Join(names, " or ") + " GPU"
}

func computeCapabilityAtLeast(g *kquantv1alpha1.GPU, req *Requirements) (bool, string, string) {
	if req.MinCC == nil {
		return true, "", ""
	}
	cc, err := capability.Parse(g.ComputeCapability)
	if err == nil && cc.AtLeast(*req.MinCC) {
		return true, "", ""
	}
	return false, ReasonComputeCapability, fmt.Sprintf("have no GPU with compute capability >= %s", req.MinCC)
}

func recipeSupported(g *kquantv1alpha1.GPU, req *Requirements) (bool, string, string) {
	support, reason := GPUSupport(g, req.Scheme)
	switch {
	case req.KernelGap != "":
		return false, ReasonUnsupported, fmt.Sprintf("cannot run %s (%s)", SchemeShortName(req.Scheme), strings.TrimSuffix(capability.ReasonNoKernel(req.KernelGap), "."))
	case support == kquantv1alpha1.SupportNative:
		return true, "", ""
	case support == kquantv1alpha1.SupportEmulated && !req.RequireNative:
		return true, "", ""
	case support == kquantv1alpha1.SupportEmulated:
		return false, ReasonNotNative, fmt.Sprintf("lack native %s (%s)", SchemeShortName(req.Scheme), notNativeDetail(g, req.Scheme, reason))
	default:
		return false, ReasonUnsupported, fmt.Sprintf("cannot run %s (%s)", SchemeShortName(req.Scheme), notNativeDetail(g, req.Scheme, reason))
	}
}

// migIncluded admits a MIG-enabled GPU only to a job that includes MIG
// slices, and only with MIG devices to run on. It comes last: a GPU that
// cannot run the recipe at all says so first.
func migIncluded(g *kquantv1alpha1.GPU, req *Requirements) (bool, string, string) {
	switch {
	case g.MIGMode != kquantv1alpha1.MIGEnabled:
		return true, "", ""
	case !req.MIGSlices:
		return false, ReasonMIGNotIncluded, "have only MIG-enabled GPUs, whose slices need " + migOptIn
	case len(g.MIGDevices) == 0:
		return false, ReasonNoMIGDevices, "have MIG-enabled GPUs without MIG devices"
	}
	return true, "", ""
}

// units are the units of work of an eligible GPU: the GPU itself, or each
// of its MIG devices.
func units(node string, g *kquantv1alpha1.GPU) []GPU {
	if g.MIGMode != kquantv1alpha1.MIGEnabled {
		return []GPU{{Node: node, Index: g.Index, UUID: g.UUID, Product: g.Product}}
	}
	out := make([]GPU, 0, len(g.MIGDevices))
	for _, m := range g.MIGDevices {
		out = append(out, GPU{Node: node, Index: g.Index, UUID: m.UUID, Product: g.Product, MIGProfile: m.Profile})
	}
	return out
}

// EvaluateNode runs the node chain, then the GPU chain on each GPU. When no GPU
// passes, the node is rejected with the reason of the GPU that came closest
// (passed the most predicates; the lowest index among equals), so that a Hopper
// node asked for native MXFP8 says "lack native MXFP8", not "unhealthy".
func EvaluateNode(n *NodeState, req *Requirements, now time.Time) NodeResult {
	res := NodeResult{Node: n.Name()}
	for _, p := range nodeChain {
		if ok, reason, msg := p(n, req, now); !ok {
			res.Reason, res.Message = reason, msg
			return res
		}
	}
	best := -1
	for i := range n.Profile.Status.GPUs {
		g := &n.Profile.Status.GPUs[i]
		passed := 0
		var reason, msg string
		for _, p := range gpuChain {
			ok, r, m := p(g, req)
			if !ok {
				reason, msg = r, m
				break
			}
			passed++
		}
		if passed == len(gpuChain) {
			res.GPUs = append(res.GPUs, units(res.Node, g)...)
			continue
		}
		if reason == ReasonMIGNotIncluded {
			res.MIGSkipped++
		}
		if passed > best {
			best, res.Reason, res.Message = passed, reason, msg
		}
	}
	if len(res.GPUs) > 0 {
		res.Reason, res.Message = "", ""
		// Stable: a GPU's MIG devices stay in slot order.
		slices.SortStableFunc(res.GPUs, func(a, b GPU) int { return int(a.Index) - int(b.Index) })
	} else if best < 0 {
		res.Reason, res.Message = ReasonNoGPUs, "have no GPUs"
	}
	return res
}

// Evaluate judges every node, in name order.
func Evaluate(nodes []NodeState, req *Requirements, now time.Time) []NodeResult {
	out := make([]NodeResult, 0, len(nodes))
	for i := range nodes {
		out = append(out, EvaluateNode(&nodes[i], req, now))
	}
	slices.SortFunc(out, func(a, b NodeResult) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// EligibleGPUs lists the eligible GPUs of results, by node then index.
func EligibleGPUs(results []NodeResult) []GPU {
	var out []GPU
	for i := range results {
		out = append(out, results[i].GPUs...)
	}
	return out
}

// MIGSkippedNote says how many MIG-enabled GPUs results left out only for
// want of the opt-in, as a clause for a job's messages; empty when none.
func MIGSkippedNote(results []NodeResult) string {
	n := 0
	for i := range results {
		n += results[i].MIGSkipped
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d MIG-enabled GPUs left out (their slices need %s)", n, migOptIn)
}

// UnschedulableMessage sums up results as "0/12 nodes: 8 lack native MXFP8
// (compute capability 9.0 < 10.0), 4 do not match nodeSelector": rejected nodes
// grouped by message, largest group first, then alphabetically, so the text is
// stable from one reconcile to the next and writes only when something changed.
func UnschedulableMessage(results []NodeResult) string {
	counts := map[string]int{}
	eligible := 0
	for i := range results {
		if results[i].Eligible() {
			eligible++
			continue
		}
		counts[results[i].Message]++
	}
	msgs := make([]string, 0, len(counts))
	for m := range counts {
		msgs = append(msgs, m)
	}
	slices.SortFunc(msgs, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = fmt.Sprintf("%d %s", counts[m], m)
	}
	head := fmt.Sprintf("%d/%d nodes", eligible, len(results))
	if len(results) == 0 {
		return head + ": no GPUNodeProfile exists (is the kquant agent running?)"
	}
	if len(parts) == 0 {
		return head
	}
	return head + ": " + strings.Join(parts, ", ")
}
