package kernels

// SetTileGridCap caps the grids of the persistent tiled NVFP4 kernels
// (columnwise and 2D) at n blocks, 0 for no cap, and returns the previous
// cap: the GPU tests run several tiles per block on small tensors with it.
func SetTileGridCap(n int) int {
	old := tileGridCap
	tileGridCap = n
	return old
}
