package apply

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/kquant/kquant/api/v1alpha1"
	ac "github.com/kquant/kquant/api/v1alpha1/applyconfiguration/api/v1alpha1"
)

// Field managers of kquant's server-side applies.
const (
	// ManagerController is the manager's (the controllers') field manager.
	ManagerController = "kquant-manager"
	// ManagerAgent is the node agent's field manager, for its run status
	// writes and its GPUNodeProfile.
	ManagerAgent = "kquant-agent"
	// ManagerRunPod is a run pod's field manager, for the status of the one
	// QuantRun it executes.
	ManagerRunPod = "kquant-run"
)

// nz returns a pointer to v, or nil when v is zero: an omitempty field.
func nz[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// ptr returns a pointer to v: a field serialised even when zero.
func ptr[T any](v T) *T { return &v }

// Time is t as an apply value; nil for nil.
func Time(t *metav1.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	return ptr(*t)
}

// QuantRunStatus is the apply configuration of status on run: the run's
// identity and, when it has one, its resourceVersion as a precondition, so
// that an apply made from a stale read conflicts instead of overwriting.
func QuantRunStatus(run *v1alpha1.QuantRun, status *ac.QuantRunStatusApplyConfiguration) *ac.QuantRunApplyConfiguration {
	obj := ac.QuantRun(run.Name, run.Namespace).WithStatus(status)
	if run.ResourceVersion != "" {
		obj.WithResourceVersion(run.ResourceVersion)
	}
	return obj
}

// String is s as an omitempty apply value: nil when empty.
func String(s string) *string { return nz(s) }

// Conditions are cs as apply configurations.
func Conditions(cs []metav1.Condition) []metav1ac.ConditionApplyConfiguration {
	if cs == nil {
		return nil
	}
	out := make([]metav1ac.ConditionApplyConfiguration, len(cs))
	for i, c := range cs {
		out[i] = metav1ac.ConditionApplyConfiguration{
			Type: ptr(c.Type), Status: ptr(c.Status), ObservedGeneration: nz(c.ObservedGeneration),
			LastTransitionTime: ptr(c.LastTransitionTime), Reason: ptr(c.Reason), Message: ptr(c.Message),
		}
	}
	return out
}

// RunResults is r as an apply configuration; nil for nil. Its numbers are
// always derived from r's decimals (v1alpha1.NumbersOf), whatever r.Numbers
// holds, so every writer of results writes matching mirrors.
func RunResults(r *v1alpha1.RunResults) *ac.RunResultsApplyConfiguration {
	if r == nil {
		return nil
	}
	out := &ac.RunResultsApplyConfiguration{
		Backend:     nz(r.Backend),
		Usage:       nz(r.Usage),
		Overhead:    overhead(r.Overhead),
		Performance: performance(r.Performance),
		Accuracy:    accuracy(r.Accuracy),
		Verdict:     nz(r.Verdict),
		Reason:      nz(r.Reason),
		Baselines:   baselines(r.Baselines),
		Numbers:     ResultNumbers(v1alpha1.NumbersOf(r)),
	}
	if c := r.Capability; c != nil {
		out.Capability = &ac.CapabilityApplyConfiguration{Native: ptr(c.Native), Emulated: ptr(c.Emulated), Reason: nz(c.Reason)}
	}
	if g := r.Graph; g != nil {
		out.Graph = &ac.GraphResultApplyConfiguration{Capturable: ptr(g.Capturable), ReplayMatchesEager: ptr(g.ReplayMatchesEager)}
	}
	if r.Shapes != nil {
		out.Shapes = make([]ac.ShapeResultApplyConfiguration, len(r.Shapes))
		for i, s := range r.Shapes {
			out.Shapes[i] = ac.ShapeResultApplyConfiguration{
				Rows: ptr(s.Rows), Cols: ptr(s.Cols),
				Overhead: overhead(s.Overhead), Performance: performance(s.Performance), Accuracy: accuracy(s.Accuracy),
			}
		}
	}
	return out
}

// ResultNumbers is n as an apply configuration; nil for nil.
func ResultNumbers(n *v1alpha1.ResultNumbers) *ac.ResultNumbersApplyConfiguration {
	if n == nil {
		return nil
	}
	return &ac.ResultNumbersApplyConfiguration{
		HostEagerMicros: nz(n.HostEagerMicros), HostGraphMicros: nz(n.HostGraphMicros),
		BandwidthGBps: nz(n.BandwidthGBps), SNRdB: nz(n.SNRdB),
	}
}

func overhead(o *v1alpha1.Overhead) *ac.OverheadApplyConfiguration {
	if o == nil {
		return nil
	}
	return &ac.OverheadApplyConfiguration{
		HostEagerMicros: nz(o.HostEagerMicros), HostGraphMicros: nz(o.HostGraphMicros),
		KernelsPerStep: nz(o.KernelsPerStep), PointerLoadMicros: nz(o.PointerLoadMicros),
	}
}

func performance(p *v1alpha1.Performance) *ac.PerformanceApplyConfiguration {
	if p == nil {
		return nil
	}
	return &ac.PerformanceApplyConfiguration{
		GPUMicros: nz(p.GPUMicros), BandwidthGBps: nz(p.BandwidthGBps), FractionOfCopyBandwidth: nz(p.FractionOfCopyBandwidth),
	}
}

func accuracy(a *v1alpha1.Accuracy) *ac.AccuracyApplyConfiguration {
	if a == nil {
		return nil
	}
	out := &ac.AccuracyApplyConfiguration{
		SNRdB: nz(a.SNRdB), MaxAbsError: nz(a.MaxAbsError), Saturated: nz(a.Saturated), FlushedToZero: nz(a.FlushedToZero),
	}
	if a.BitExactVsReference != nil {
		out.BitExactVsReference = ptr(*a.BitExactVsReference)
	}
	return out
}

// GPUNodeProfileStatus is s as an apply configuration.
func GPUNodeProfileStatus(s *v1alpha1.GPUNodeProfileStatus) *ac.GPUNodeProfileStatusApplyConfiguration {
	out := &ac.GPUNodeProfileStatusApplyConfiguration{
		ObservedGeneration: nz(s.ObservedGeneration),
		GPUCount:           nz(s.GPUCount),
		DriverVersion:      nz(s.DriverVersion),
		CUDADriverVersion:  nz(s.CUDADriverVersion),
		Backend:            nz(s.Backend),
		Simulated:          nz(s.Simulated),
		Recipes:            recipes(s.Recipes),
		AgentVersion:       nz(s.AgentVersion),
		Conditions:         Conditions(s.Conditions),
	}
	if s.GPUs != nil {
		out.GPUs = make([]ac.GPUApplyConfiguration, len(s.GPUs))
		for i, g := range s.GPUs {
			out.GPUs[i] = ac.GPUApplyConfiguration{
				Index: ptr(g.Index), UUID: ptr(g.UUID), Product: nz(g.Product), ComputeCapability: nz(g.ComputeCapability),
				Architecture: nz(g.Architecture), MemoryMiB: nz(g.MemoryMiB), MIGMode: nz(g.MIGMode),
				MIGModePending: nz(g.MIGModePending), MIGDevices: migDevices(g.MIGDevices),
				Health: nz(g.Health), HealthMessage: nz(g.HealthMessage), Recipes: recipes(g.Recipes),
				Allocations: allocations(g.Allocations),
			}
		}
	}
	out.Baselines = baselines(s.Baselines)
	return out
}

func baselines(b *v1alpha1.Baselines) *ac.BaselinesApplyConfiguration {
	if b == nil {
		return nil
	}
	return &ac.BaselinesApplyConfiguration{
		LaunchMicros: nz(b.LaunchMicros), GraphLaunchMicros: nz(b.GraphLaunchMicros), CopyBandwidthGBps: nz(b.CopyBandwidthGBps),
	}
}

func allocations(as []v1alpha1.GPUAllocation) []ac.GPUAllocationApplyConfiguration {
	if as == nil {
		return nil
	}
	out := make([]ac.GPUAllocationApplyConfiguration, len(as))
	for i, a := range as {
		out[i] = ac.GPUAllocationApplyConfiguration{
			Namespace: ptr(a.Namespace), Pod: ptr(a.Pod), Container: nz(a.Container), Source: ptr(a.Source),
			ResourceName: nz(a.ResourceName), Claim: nz(a.Claim), Shared: nz(a.Shared), MIGDevice: nz(a.MIGDevice),
		}
	}
	return out
}

func migDevices(ms []v1alpha1.MIGDevice) []ac.MIGDeviceApplyConfiguration {
	if ms == nil {
		return nil
	}
	out := make([]ac.MIGDeviceApplyConfiguration, len(ms))
	for i, m := range ms {
		out[i] = ac.MIGDeviceApplyConfiguration{UUID: ptr(m.UUID), Profile: nz(m.Profile), MemoryMiB: nz(m.MemoryMiB)}
		if m.GPUInstanceID != nil {
			out[i].GPUInstanceID = ptr(*m.GPUInstanceID)
		}
		if m.ComputeInstanceID != nil {
			out[i].ComputeInstanceID = ptr(*m.ComputeInstanceID)
		}
	}
	return out
}

// AllocatedGPU is g as an apply configuration; nil for nil.
func AllocatedGPU(g *v1alpha1.AllocatedGPU) *ac.AllocatedGPUApplyConfiguration {
	if g == nil {
		return nil
	}
	out := &ac.AllocatedGPUApplyConfiguration{UUID: ptr(g.UUID), MIGDevice: nz(g.MIGDevice), Source: nz(g.Source)}
	if g.Index != nil {
		out.Index = ptr(*g.Index)
	}
	return out
}

func recipes(rs []v1alpha1.RecipeSupport) []ac.RecipeSupportApplyConfiguration {
	if rs == nil {
		return nil
	}
	out := make([]ac.RecipeSupportApplyConfiguration, len(rs))
	for i, r := range rs {
		out[i] = ac.RecipeSupportApplyConfiguration{Scheme: ptr(r.Scheme), Support: ptr(r.Support), Reason: nz(r.Reason)}
	}
	return out
}
