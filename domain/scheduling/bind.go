// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scheduling

import (
	"cmp"
	"slices"
	"strings"
)

// PendingRun is a run waiting for a GPU, as the binder sees it.
type PendingRun struct {
	// Name identifies the run ("namespace/name").
	Name string
	// Job identifies its job ("namespace/name").
	Job string
	// TargetNode and TargetGPU pin the run to its slot's node or GPU.
	TargetNode string
	TargetGPU  string
	// Avoid lists GPUs where earlier attempts of the slot failed, and
	// AvoidNodes their nodes: a retry goes elsewhere when anything else fits.
	Avoid      []string
	AvoidNodes []string
}

// JobCapacity is what one job may still take in a binding pass.
type JobCapacity struct {
	// Free is maxParallel minus the job's active runs.
	Free int
	// ActiveByNode counts the job's active runs per node, to spread new ones.
	ActiveByNode map[string]int
	// Eligible are the GPUs the job may use, by node then index.
	Eligible []GPU
}

// Busy is the set of GPUs that runs hold. Assign asks it about every GPU it
// considers and adds the GPUs it gives out.
type Busy interface {
	Has(uuid string) bool
	Add(uuid string)
}

// BusySet is a Busy of its own: a set of GPU UUIDs.
type BusySet map[string]bool

// Has reports whether uuid is in the set.
func (s BusySet) Has(uuid string) bool { return s[uuid] }

// Add puts uuid in the set.
func (s BusySet) Add(uuid string) { s[uuid] = true }

// Binding assigns a run to a GPU.
type Binding struct {
	Run string
	GPU GPU
}

// Assign binds pending runs to free GPUs. pending is in first-come first-served
// order (older jobs first); each run takes the best free GPU that its job may
// use, so a younger job only gets GPUs that no older job could take in this
// pass. A GPU in busy is never taken, and busy is updated, so at most one run
// is active per GPU. Among candidates the choice is deterministic: GPUs the slot
// has not failed on, then nodes it has not failed on, then the node with the fewest of the job's active runs,
// then node name, then GPU index.
//
// Jobs asking the same thing share one Eligible slice (the binder memoises the
// fleet evaluation per requirement), and Assign indexes each distinct slice
// once: a run pinned to a GPU or node looks it up instead of scanning the
// fleet, and once a scan finds no free GPU in a slice, later runs on it skip it
// (busy only grows within a pass). A pass is then linear in pending runs plus
// the GPUs taken, instead of their product: 10,000 waiting runs over 8,000
// busy GPUs were 80 million comparisons per pass. A slice's lookup index is
// built only when a pinned run needs it: a one-run AnyGPU job, bound as it is
// created, scans its slice once, and building a map of 8,000 GPUs for that
// scan was most of its cost.
func Assign(pending []PendingRun, jobs map[string]*JobCapacity, busy Busy) []Binding {
	var out []Binding
	pools := map[poolKey]*pool{}
	for i := range pending {
		pr := &pending[i]
		jc := jobs[pr.Job]
		if jc == nil || jc.Free <= 0 || len(jc.Eligible) == 0 {
			continue
		}
		key := poolKey{first: &jc.Eligible[0], n: len(jc.Eligible)}
		p := pools[key]
		if p == nil {
			p = newPool(jc.Eligible)
			pools[key] = p
		}
		best, found := p.best(pr, jc.ActiveByNode, busy)
		if !found {
			continue
		}
		busy.Add(best.UUID)
		jc.Free--
		if jc.ActiveByNode == nil {
			jc.ActiveByNode = map[string]int{}
		}
		jc.ActiveByNode[best.Node]++
		out = append(out, Binding{Run: pr.Name, GPU: best})
	}
	return out
}

// poolKey identifies a slice: the same first element and length.
type poolKey struct {
	first *GPU
	n     int
}

// pool is one Eligible slice, indexed for a pass.
type pool struct {
	gpus []GPU
	// byUUID and byNode index gpus for pinned runs; nil until one asks.
	byUUID map[string]int
	byNode map[string][]int
	// ordered says whether gpus are in the order better ranks them when
	// nothing else differs (node, index, UUID); nil until a scan asks.
	ordered *bool
	// full is set when a scan of every GPU found none free.
	full bool
}

func newPool(gpus []GPU) *pool {
	return &pool{gpus: gpus}
}

// index builds the pool's lookup index, once.
func (p *pool) index() {
	if p.byUUID != nil {
		return
	}
	p.byUUID, p.byNode = make(map[string]int, len(p.gpus)), map[string][]int{}
	for i, g := range p.gpus {
		p.byUUID[g.UUID] = i
		p.byNode[g.Node] = append(p.byNode[g.Node], i)
	}
}

// best is the best free GPU of the pool for pr, if any.
func (p *pool) best(pr *PendingRun, active map[string]int, busy Busy) (GPU, bool) {
	if p.full {
		return GPU{}, false
	}
	switch {
	case pr.TargetGPU != "":
		p.index()
		i, ok := p.byUUID[pr.TargetGPU]
		if !ok || busy.Has(pr.TargetGPU) || (pr.TargetNode != "" && p.gpus[i].Node != pr.TargetNode) {
			return GPU{}, false
		}
		return p.gpus[i], true
	case pr.TargetNode != "":
		p.index()
		best, found := GPU{}, false
		for _, i := range p.byNode[pr.TargetNode] {
			if g := p.gpus[i]; !busy.Has(g.UUID) && (!found || better(g, best, pr, active)) {
				best, found = g, true
			}
		}
		return best, found
	}
	// In an ordered pool, a run that avoids nothing takes the first free GPU
	// on a node where its job has no active run: no GPU after it ranks
	// higher, and every one before it was busy or on a busier node. A burst
	// of one-run jobs then stops at the first free GPU instead of asking
	// about all 8,000 for each job.
	stopAtIdle := len(pr.Avoid) == 0 && len(pr.AvoidNodes) == 0 && p.isOrdered()
	best, found := GPU{}, false
	for _, g := range p.gpus {
		if !busy.Has(g.UUID) && (!found || better(g, best, pr, active)) {
			best, found = g, true
			if stopAtIdle && active[g.Node] == 0 {
				return best, true
			}
		}
	}
	p.full = !found
	return best, found
}

// isOrdered reports, once, whether the pool's GPUs are in (node, index,
// UUID) order, as scheduling.EligibleGPUs and the binder list them.
func (p *pool) isOrdered() bool {
	if p.ordered == nil {
		ok := slices.IsSortedFunc(p.gpus, compareGPUs)
		p.ordered = &ok
	}
	return *p.ordered
}

// compareGPUs orders GPUs by node, index and UUID: better's last three keys.
func compareGPUs(a, b GPU) int {
	return cmp.Or(strings.Compare(a.Node, b.Node), cmp.Compare(a.Index, b.Index), strings.Compare(a.UUID, b.UUID))
}

// SortGPUs puts gpus in (node, index, UUID) order, the order in which Assign
// can stop at the first free GPU instead of scanning them all.
func SortGPUs(gpus []GPU) {
	slices.SortFunc(gpus, compareGPUs)
}

func better(a, b GPU, pr *PendingRun, active map[string]int) bool {
	if aa, ba := slices.Contains(pr.Avoid, a.UUID), slices.Contains(pr.Avoid, b.UUID); aa != ba {
		return !aa
	}
	if aa, ba := slices.Contains(pr.AvoidNodes, a.Node), slices.Contains(pr.AvoidNodes, b.Node); aa != ba {
		return !aa
	}
	if active[a.Node] != active[b.Node] {
		return active[a.Node] < active[b.Node]
	}
	if c := strings.Compare(a.Node, b.Node); c != 0 {
		return c < 0
	}
	if a.Index != b.Index {
		return a.Index < b.Index
	}
	return a.UUID < b.UUID // the MIG devices of one GPU
}
