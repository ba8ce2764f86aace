// Package gate is the controller that keeps nodes whose GPUs fail validation
// away from training: for every QuantJob with spec.gate, a node where the
// latest gated run of a recipe family on some GPU has verdict Fail gets the
// label gate.kquant.dev/<family>=failed (gate.label) and/or a taint of that key
// and value with the job's effect (gate.taint). When a later gated run of that
// family passes (Pass or Warn) on every GPU whose latest run failed, both are
// removed.
//
// The gate owns the gate.kquant.dev/ keys and nothing else; the recipe-support
// labels kquant.dev/<family>=native|emulated belong to package nodelabels, so
// the two never write the same key. A node without any gated run left (jobs
// deleted after their TTL) keeps its gate until a later validation passes.
//
// Decide is the policy, a pure function; the Reconciler (one request per node)
// reads the node's finished runs through the run-by-node index and patches the
// Node's labels and taints in one merge patch conditioned on its
// resourceVersion. It also watches the Nodes' gate labels (metadata only), so
// that a gate removed by hand while its failure stands comes back.
package gate
