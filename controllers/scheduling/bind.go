package scheduling

import (
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
func Assign(pending []PendingRun, jobs map[string]*JobCapacity, busy map[string]bool) []Binding {
	var out []Binding
	for i := range pending {
		pr := &pending[i]
		jc := jobs[pr.Job]
		if jc == nil || jc.Free <= 0 {
			continue
		}
		best, found := GPU{}, false
		for _, g := range jc.Eligible {
			if busy[g.UUID] || (pr.TargetNode != "" && g.Node != pr.TargetNode) || (pr.TargetGPU != "" && g.UUID != pr.TargetGPU) {
				continue
			}
			if !found || better(g, best, pr, jc.ActiveByNode) {
				best, found = g, true
			}
		}
		if !found {
			continue
		}
		busy[best.UUID] = true
		jc.Free--
		if jc.ActiveByNode == nil {
			jc.ActiveByNode = map[string]int{}
		}
		jc.ActiveByNode[best.Node]++
		out = append(out, Binding{Run: pr.Name, GPU: best})
	}
	return out
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
	return a.Index < b.Index
}
