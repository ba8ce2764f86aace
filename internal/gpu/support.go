// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpu

import (
	"errors"
	"fmt"
	"math"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/element"
	"github.com/kquant/kquant/kernels"
)

// ErrNotImplemented is wrapped by the error of a recipe (or recipe option)
// that the kernels do not cover yet; the reference backend can emulate it.
var ErrNotImplemented = errors.New("not yet implemented on the cuda backend (the reference backend can emulate it)")

// checkPlan reports whether the kernels cover a resolved recipe: every
// scheme and option of quant.Recipe, MXFP8 in 1x32/32x1 blocks
// (kernels.MXFP8Swizzled, MXFP8BothSwizzled) and in 32x32 weight tiles
// (kernels.MXFP82D) included, except NVFP4's 4over6 block scales and
// row-scaled activations, which have no kernel yet
// (capability.KernelGap names the same two for the controllers). What it
// rejects wraps ErrNotImplemented.
func checkPlan(p quant.Plan) error {
	switch p.Scheme {
	case quant.DelayedScaling, quant.Float8CurrentScaling, quant.Float8BlockScaling:
	case quant.MXFP8BlockScaling:
		if p.BlockRows != 1 && p.BlockRows != 32 {
			return fmt.Errorf("scheme %s with %dx%d blocks (the kernels quantize MXFP8 in 1x32 and 32x1 blocks and 32x32 tiles): %w", p.Scheme, p.BlockRows, p.BlockCols, ErrNotImplemented)
		}
	case quant.NVFP4BlockScaling:
		if p.Element != element.E2M1 {
			return fmt.Errorf("scheme %s with element %v: %w", p.Scheme, p.Element, ErrNotImplemented)
		}
		if p.FourOverSix != "" {
			return fmt.Errorf("scheme %s with 4over6 block scales (%s): %w", p.Scheme, p.FourOverSix, ErrNotImplemented)
		}
		if p.RowScaled {
			return fmt.Errorf("scheme %s with row-scaled activations: %w", p.Scheme, ErrNotImplemented)
		}
		return nil
	default:
		return fmt.Errorf("scheme %s: %w", p.Scheme, ErrNotImplemented)
	}
	if _, err := format(p.Element); err != nil {
		return err
	}
	return nil
}

// format maps an FP8 element type to the kernels' format.
func format(t element.Type) (kernels.Format, error) {
	switch t {
	case element.E4M3:
		return kernels.E4M3, nil
	case element.E5M2:
		return kernels.E5M2, nil
	default:
		return 0, fmt.Errorf("element type %v: %w", t, ErrNotImplemented)
	}
}

// InputType returns the narrowest element type that holds every value of
// x exactly: BF16 when the low 16 bits of every float32 are zero, else FP16
// when every value survives a round trip through half precision (NaN of
// any payload counts as surviving: the kernels and the reference treat all
// NaNs alike), else FP32. Widening is exact, so the kernels compute on the
// very values the reference sees.
func InputType(x []float32) kernels.DType {
	bf16 := true
	for _, v := range x {
		if math.Float32bits(v)&0xFFFF != 0 {
			bf16 = false
			break
		}
	}
	if bf16 {
		return kernels.BF16
	}
	for _, v := range x {
		if v != v {
			continue
		}
		if math.Float32bits(element.FP16ToFloat32(element.Float32ToFP16(v))) != math.Float32bits(v) {
			return kernels.F32
		}
	}
	return kernels.F16
}

// encodeInput writes x in type dt (which must hold it exactly) into dst,
// little-endian, as the kernels read it.
func encodeInput(dst []byte, x []float32, dt kernels.DType) {
	switch dt {
	case kernels.BF16:
		for i, v := range x {
			b := math.Float32bits(v) >> 16
			dst[2*i], dst[2*i+1] = byte(b), byte(b>>8)
		}
	case kernels.F16:
		for i, v := range x {
			b := element.Float32ToFP16(v)
			dst[2*i], dst[2*i+1] = byte(b), byte(b>>8)
		}
	default:
		for i, v := range x {
			b := math.Float32bits(v)
			dst[4*i], dst[4*i+1], dst[4*i+2], dst[4*i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
		}
	}
}

// Covers reports whether the kernels run recipe for role; the error wraps
// ErrNotImplemented and names what is missing. It makes the backend a
// measure.Coverage, so that the measurement harness runs what it does not cover
// on the reference backend instead of failing the run.
func (b *Backend) Covers(recipe quant.Recipe, role quant.TensorRole) error {
	p, err := recipe.Plan(role)
	if err != nil {
		return err
	}
	return checkPlan(p)
}
