package gpu

import (
	"errors"
	"testing"

	"github.com/kquant/kquant/internal/quant"
)

// TestCoversRefusesNewNVFP4Options: the kernels do not implement 4over6 or
// row-scaled activations yet, so Covers refuses the roles they apply to
// (the measurement harness then runs them on the reference) and accepts
// the roles they leave alone.
func TestCoversRefusesNewNVFP4Options(t *testing.T) {
	fourOverSix := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	fourOverSix.NVFP4.FourOverSix = quant.ScopeWeights
	rowScaled := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	rowScaled.NVFP4.RandomHadamardTransform = false
	rowScaled.NVFP4.RowScaledActivation = true
	cases := []struct {
		name    string
		recipe  quant.Recipe
		role    quant.TensorRole
		refused bool
	}{
		{"4over6 weights", fourOverSix, quant.Weight, true},
		{"4over6 leaves inputs", fourOverSix, quant.Input, false},
		{"4over6 leaves gradients", fourOverSix, quant.Gradient, false},
		{"row-scaled inputs", rowScaled, quant.Input, true},
		{"row-scaled leaves weights", rowScaled, quant.Weight, false},
	}
	var b Backend
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := b.Covers(tc.recipe, tc.role)
			if got := errors.Is(err, ErrNotImplemented); got != tc.refused {
				t.Errorf("Covers: %v, refused %v, want %v", err, got, tc.refused)
			}
		})
	}
}

// TestCheckNoOpRefuses: the kernels do not read the no-op flag yet.
func TestCheckNoOpRefuses(t *testing.T) {
	flag := float32(0)
	if err := checkNoOp(quant.Request{NoOp: &flag}); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("checkNoOp with a flag: %v, want ErrNotImplemented", err)
	}
	if err := checkNoOp(quant.Request{}); err != nil {
		t.Errorf("checkNoOp without a flag: %v", err)
	}
}
