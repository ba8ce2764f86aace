// Command agent is kquant's node agent, run as a DaemonSet on GPU nodes (or
// as many processes on one machine with --simulate and distinct
// --node-name). It discovers the node's GPUs, publishes its GPUNodeProfile
// and Lease, and executes the QuantRuns bound to the node.
//
// SIGTERM or SIGINT start a graceful shutdown (no new runs, running ones get
// --shutdown-grace to finish, the profile goes not Ready); a second signal
// stops at once.
package main
