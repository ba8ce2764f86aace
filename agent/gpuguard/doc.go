// Package gpuguard is the last guard of the run-pod model: before a run's
// first kernel, and periodically while it runs, NVML must show no process on
// the run's GPU other than the run's own. If one appears the run stops with
// ErrGPUInUse (reason GPUInUse) and is retried later; it never measures
// beside another workload, which would disturb that workload and make the
// run's numbers point at healthy hardware.
//
// Check asks NVML (github.com/NVIDIA/go-nvml, behind the Library seam so that
// its mock package drives the tests) for the compute, MPS-compute and
// graphics processes on the GPU named by UUID (a MIG device's UUID names the
// slice) and returns an *InUseError, which matches ErrGPUInUse, listing every
// PID that Allowed does not accept. Watch runs Check on a ticker and cancels
// a context, with the error as its cause, the first time a foreign process
// shows up.
//
// Where the check runs. The driver is not PID-namespace aware: NVML reports
// every process on the GPU by its PID in the host's namespace, whichever
// container asks. So:
//   - inside an ordinary run pod (its own PID namespace) the list still shows
//     other pods' processes, but the run cannot tell which entry is its own
//     once it holds a CUDA context: its host PID is not its PID. Before its
//     first CUDA call it holds none, so every process is foreign, and Check
//     with NoProcessAllowed is exact. That pre-start check needs no privilege.
//   - the periodic check needs to tell the run's own process from the
//     others. That takes the host's PID namespace: the agent DaemonSet with
//     hostPID, which resolves a host PID to its pod through
//     /proc/<pid>/cgroup (PodProcesses).
//
// Recommended: the run pod does the pre-start check itself (no privilege,
// and nothing to wait for), and the agent, with hostPID, runs Watch for
// every run pod on its node and fails the run with GPUInUse when another
// process appears. Giving hostPID to run pods instead would need the
// privileged PodSecurity level in every namespace that holds runs, the
// users' namespaces; the agent's namespace needs it already for the
// kubelet's PodResources socket, and it stays one place to audit.
package gpuguard
