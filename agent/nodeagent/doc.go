// Package nodeagent assembles one node agent: discovery (real NVML or a
// simulated node), baselines, the GPUNodeProfile and its Lease, and the
// executor of the node's QuantRuns, on one controller-runtime manager whose
// cache holds only this node's runs.
//
// cmd/agent calls Run once per process; tests and scale simulations call it
// many times in one process, one per simulated node, which is why nothing
// here touches process-wide state except through what Options passes in
// (the metrics registerer in particular).
package nodeagent

// The agent's RBAC, generated into config/rbac/agent_role.yaml. The
// ValidatingAdmissionPolicy in config/policy narrows every write to the
// agent's own node.
//
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups=kquant.dev,resources=gpunodeprofiles,verbs=get;create;patch
// +kubebuilder:rbac:groups=kquant.dev,resources=gpunodeprofiles/status;quantruns/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kquant.dev,resources=quantruns,verbs=get;list;watch
