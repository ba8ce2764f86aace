package kernels

// SetTileGridCap caps the grids of s's persistent tiled NVFP4 kernels
// (columnwise and 2D) at n blocks, 0 for no cap, and returns the previous
// cap: the GPU tests run several tiles per block on small tensors with it.
func (s *Set) SetTileGridCap(n int) int {
	old := s.tileGridCap
	s.tileGridCap = n
	return old
}
