// Package nodelifecycle is the controller that notices lost nodes, as the
// Kubernetes node lifecycle controller does from kubelets' Leases: when the
// Lease kquant-agent-<node> of a node's agent expires (or disappears), every
// run bound to that node and not finished is failed with reason NodeLost, so
// that its job can retry it elsewhere. Expiry is not an event, so each Lease is
// reconciled again at the moment it would expire.
package nodelifecycle
