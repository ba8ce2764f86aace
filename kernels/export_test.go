package kernels

// SetTileGridCap caps the grid of s's persistent tiled NVFP4 kernels (the
// columnwise fast path, the ungrouped RHT amax and the persistent 2D kernel
// kq_nvf4_2dp_, whose blocks stride over tiles; the default 2D kernel
// takes one block per tile) and of the rowwise streaming MXFP8 kernel
// kq_mxfp8_rowb at n blocks, 0 for no cap, and returns the previous cap:
// the GPU tests run several tiles (units) per block on small tensors with
// it.
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
