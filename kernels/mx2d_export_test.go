package kernels

// SetMX2DGridCap caps the grid of MXFP82D and GroupedMXFP82D at n blocks
// (0: no cap) until the returned function restores the previous cap: the
// GPU tests run the 2D kernels with blocks that stride over several macro
// tiles (the prefetch of the next tile, ragged and padding tiles among
// them), which the test shapes alone reach only above 4 blocks per SM.
func SetMX2DGridCap(n int) (restore func()) {
	old := mx2dGridCap
	mx2dGridCap = n
	return func() { mx2dGridCap = old }
}
