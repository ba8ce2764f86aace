// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpuguard

import (
	"slices"
	"sync"
)

// Self is this process's own PID in the host's namespace, as NVML reports it,
// learned without hostPID: right after the process created its first CUDA
// context on a GPU that the pre-start check found empty, the one process NVML
// lists there is this one. A process keeps its host PID for life, so one Self
// serves every GPU the process uses (the in-agent executor's several GPUs).
// The zero value knows nothing yet.
type Self struct {
	mu  sync.Mutex
	pid uint32
}

// PID returns the learned host PID, 0 before Learn found it.
func (s *Self) PID() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pid
}

// Allowed accepts this process's host PID once it is known, nothing before.
func (s *Self) Allowed() Allowed {
	return func(pid uint32) bool {
		own := s.PID()
		return own != 0 && pid == own
	}
}

// Learn is called right after this process created its CUDA context on the
// GPU with this UUID, which the pre-start check found without any process
// (Check with self.Allowed()). When the host PID is not known yet and exactly
// one process is there now, that process is this one, and self learns its
// PID. Any other process found is foreign: Learn returns an *InUseError
// naming every process it cannot tell from its own (when two appeared at once
// neither can be trusted, so both are named).
func (g *Guard) Learn(gpuUUID string, self *Self) error {
	procs, err := g.Processes(gpuUUID)
	if err != nil {
		return err
	}
	allowed := self.Allowed()
	var unknown []Process
	var pids []uint32
	for _, p := range procs {
		if allowed(p.PID) {
			continue
		}
		unknown = append(unknown, p)
		if !slices.Contains(pids, p.PID) {
			pids = append(pids, p.PID)
		}
	}
	self.mu.Lock()
	defer self.mu.Unlock()
	switch {
	case len(pids) == 0:
		return nil
	case self.pid == 0 && len(pids) == 1:
		self.pid = pids[0]
		return nil
	default:
		return &InUseError{GPU: gpuUUID, Processes: unknown}
	}
}
