// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpuguard

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultProcRoot is where the agent, with hostPID, sees the host's processes.
const DefaultProcRoot = "/proc"

// PodProcesses accepts the host PIDs whose cgroup belongs to the pod with
// this UID: the run pod's own processes, as the agent (hostPID) sees them.
// The kubelet puts every container of a pod under a cgroup named after the
// pod's UID, "pod<uid>" with the cgroupfs driver and "pod<uid with _>" in a
// .slice with the systemd driver. A PID whose cgroup cannot be read (it
// exited, or is not visible) is not accepted.
func PodProcesses(procRoot string, podUID types.UID) Allowed {
	cgroupfs := "pod" + string(podUID)
	systemd := "pod" + strings.ReplaceAll(string(podUID), "-", "_")
	return func(pid uint32) bool {
		b, err := os.ReadFile(filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10), "cgroup"))
		if err != nil {
			return false
		}
		s := string(b)
		return strings.Contains(s, cgroupfs) || strings.Contains(s, systemd)
	}
}
