// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import "github.com/kquant/kquant/internal/cuda"

// SetTileGridCap caps the grids that waveSlots sizes (the persistent
// kernels whose blocks take several tiles: the NVFP4 columnwise fast path,
// RHT amax and kq_nvf4_2dp_, the MXFP8 macro tiles, the MXFP8 32x32 tiles,
// kq_mxfp8_rowb and the delayed-scaling cast + transpose; the NVFP4 amax
// kernel's one wave) at n blocks, 0 for no cap, and returns the previous cap: the GPU tests run several
// tiles per block on small tensors with it.
func (s *Set) SetTileGridCap(n int) int {
	old := s.tileGridCap
	s.tileGridCap = n
	return old
}

// SetNVFP42D selects s's 2D NVFP4 fast path of 16-bit inputs as
// NVFP42DEnv would ("", "one", "pipe") and returns the previous choice: the GPU
// tests compare the variants in one process.
func (s *Set) SetNVFP42D(v string) (string, error) {
	old := s.nvfp42D
	return old, s.setNVFP42D(v)
}

// ResidentPerSM is, for each kernel of the loaded modules, how many of its
// 256-thread blocks one SM holds at once, as the module's load read it from
// the driver (Set.perSM).
func (s *Set) ResidentPerSM() map[string]int { return s.perSM }

// LoadAll loads every module not loaded yet, as the first use of one of
// its kernels would.
func (s *Set) LoadAll(c *cuda.Ctx) error {
	for _, m := range moduleTable() {
		if s.isLoaded(m.name) {
			continue
		}
		if err := s.loadModule(c, m.name); err != nil {
			return err
		}
	}
	return nil
}
