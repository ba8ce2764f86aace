package kernels

// SetTileGridCap caps the grids of s's persistent tiled kernels (the NVFP4
// columnwise fast path and the ungrouped RHT amax, whose blocks stride over
// row tiles, the 2D kernel taking one block per tile; and the MXFP8
// macro-tile kernels) at n blocks, 0 for no cap, and returns the previous
// cap: the GPU tests run several tiles per block on small tensors with it.
func (s *Set) SetTileGridCap(n int) int {
	old := s.tileGridCap
	s.tileGridCap = n
	return old
}
