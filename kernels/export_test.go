package kernels

// SetTileGridCap caps the grid of s's persistent tiled NVFP4 kernels (the
// columnwise fast path, and the ungrouped RHT amax, whose blocks stride
// over row tiles; the 2D kernel takes one block per tile) at n blocks, 0
// for no cap, and returns the previous cap: the GPU tests run
// several tiles per block on small tensors with it.
func (s *Set) SetTileGridCap(n int) int {
	old := s.tileGridCap
	s.tileGridCap = n
	return old
}
