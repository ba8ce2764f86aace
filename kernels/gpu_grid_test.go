//go:build gpu

package kernels_test

import (
	"testing"
)

// TestResidentPerSM: Load read every kernel's occupancy from the driver,
// at least one block of 256 threads a SM each (a kernel that fits none
// could not launch). It logs the NVFP4 amax kernel's, whose one-wave grid
// is sized from it (nvfp4AmaxShare), and the rowwise kernel's.
func TestResidentPerSM(t *testing.T) {
	perSM := set.ResidentPerSM()
	if len(perSM) == 0 {
		t.Fatal("no occupancy read at Load")
	}
	for name, n := range perSM {
		if n < 1 {
			t.Errorf("%s: %d blocks a SM", name, n)
		}
	}
	for _, name := range []string{"kq_nvf4_amax_bf16", "kq_nvf4_amax_f16", "kq_nvf4_amax_f32", "kq_nvf4_row_bf16", "kq_nvf4_row_f32"} {
		t.Logf("%s: %d blocks a SM", name, perSM[name])
	}
}
