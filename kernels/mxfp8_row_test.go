package kernels

import "testing"

func TestMXFP8RowKernel(t *testing.T) {
	for v, want := range map[string]string{"": "kq_mxfp8_roww_", "roww": "kq_mxfp8_roww_", "rowr": "kq_mxfp8_rowr_"} {
		if got, err := mxfp8RowKernel(v); err != nil || got != want {
			t.Errorf("mxfp8RowKernel(%q) = %q, %v; want %q", v, got, err, want)
		}
	}
	if _, err := mxfp8RowKernel("rowz"); err == nil {
		t.Error("mxfp8RowKernel(\"rowz\"): want an error naming " + MXFP8RowEnv)
	}
}
