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
