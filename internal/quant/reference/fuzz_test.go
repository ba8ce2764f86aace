// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/kquant/kquant/internal/quant"
)

// fuzzTensor builds a small tensor from fuzz bytes, four bytes per float32
// bit pattern, so the fuzzer reaches NaNs, infinities and subnormals.
func fuzzTensor(data []byte, rows, cols uint8) quant.Tensor {
	x := quant.NewTensor(int(rows%40), int(cols%70))
	for i := range x.Data {
		if len(data) >= 4 {
			off := (i * 4) % (len(data) - len(data)%4)
			x.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[off:]))
		}
	}
	return x
}

// fuzzQuantize quantizes and dequantizes without panicking, and checks the
// result against the element-wise oracle.
func fuzzQuantize(t *testing.T, r quant.Recipe, roleByte uint8, x quant.Tensor, seed uint64) {
	role := allRoles[int(roleByte)%len(allRoles)]
	var st *quant.State
	if r.Scheme == quant.DelayedScaling {
		st = quant.NewState(r)
		st.Scale = math.Float32frombits(uint32(seed)) // any scale, even NaN or 0
	}
	plan, err := r.Plan(role)
	if err != nil {
		t.Fatal(err)
	}
	var before *quant.State
	if st != nil {
		before = st.Clone()
	}
	res, err := New().Quantize(context.Background(), quant.Request{Recipe: r, Role: role, State: st, Seed: seed}, x)
	if err != nil {
		t.Fatal(err)
	}
	wr, wc := oracleQuantize(plan, x, before, seed, 0)
	checkOperand(t, "rowwise", plan, res.Rowwise, wr)
	checkOperand(t, "columnwise", plan, res.Columnwise, wc)
	for _, u := range []quant.Usage{quant.UsageRowwise, quant.UsageColumnwise} {
		if _, err := New().Dequantize(context.Background(), res, u); err != nil {
			t.Fatal(err)
		}
	}
}

func addSeeds(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x3f, 0, 0, 0xc0, 0x7f}, uint8(3), uint8(5), uint8(0), uint8(0), uint64(1))
	f.Add([]byte{0, 0, 0x80, 0x7f, 1, 0, 0, 0, 0xff, 0xff, 0x7f, 0x7f}, uint8(33), uint8(17), uint8(2), uint8(3), uint64(0x3f800000))
}

func FuzzDelayedScaling(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, rows, cols, role, opts uint8, seed uint64) {
		r := quant.DefaultRecipe(quant.DelayedScaling)
		r.Delayed.AmaxHistoryLen = 1 + int(opts%4)
		if opts&4 != 0 {
			r.Format = quant.FormatE4M3
		}
		fuzzQuantize(t, r, role, fuzzTensor(data, rows, cols), seed)
	})
}

func FuzzFloat8CurrentScaling(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, rows, cols, role, opts uint8, seed uint64) {
		r := quant.DefaultRecipe(quant.Float8CurrentScaling)
		r.Current.Power2Scales = opts&1 != 0
		if opts&2 != 0 {
			r.Current.AmaxEpsilon = float32(opts) * 1e-3
		}
		fuzzQuantize(t, r, role, fuzzTensor(data, rows, cols), seed)
	})
}

func FuzzFloat8BlockScaling(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, rows, cols, role, opts uint8, seed uint64) {
		r := quant.DefaultRecipe(quant.Float8BlockScaling)
		r.Block.Power2Scales = opts&1 == 0
		if opts&2 != 0 {
			r.Format = quant.FormatHybrid
		}
		fuzzQuantize(t, r, role, fuzzTensor(data, rows, cols), seed)
	})
}

func FuzzMXFP8BlockScaling(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, rows, cols, role, opts uint8, seed uint64) {
		r := quant.DefaultRecipe(quant.MXFP8BlockScaling)
		if opts&1 != 0 {
			r.MXFP8.ScaleRounding = quant.ScaleRoundingOCP
		}
		r.MXFP8.TwoDimensionalWeights = opts&2 != 0
		if opts&4 != 0 {
			r.Format = quant.FormatHybrid
		}
		fuzzQuantize(t, r, role, fuzzTensor(data, rows, cols), seed)
	})
}

func FuzzNVFP4BlockScaling(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, rows, cols, role, opts uint8, seed uint64) {
		r := quant.DefaultRecipe(quant.NVFP4BlockScaling)
		r.NVFP4.RandomHadamardTransform = opts&1 == 0
		r.NVFP4.StochasticRounding = opts&2 == 0
		r.NVFP4.TwoDimensionalWeights = opts&4 == 0
		r.NVFP4.RHTSignMask ^= uint16(opts) << 8
		fuzzQuantize(t, r, role, fuzzTensor(data, rows, cols), seed)
	})
}

func FuzzQuantizeGrouped(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4}, uint8(0), uint8(3), uint8(1), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, scheme, g0, g1, g2 uint8) {
		s := quant.Schemes()[int(scheme)%len(quant.Schemes())]
		r := quant.DefaultRecipe(s)
		r.Delayed.AmaxHistoryLen = 2
		// Split sizes from the fuzzer, some aligned and some not.
		splits := []int{int(g0 % 4 * 16), int(g1 % 4 * 16), int(g2 % 4 * 16)}
		rows := splits[0] + splits[1] + splits[2]
		x := quant.NewTensor(rows, 9)
		for i := range x.Data {
			if len(data) > 0 {
				x.Data[i] = float32(int8(data[i%len(data)])) / 16
			}
		}
		var states []*quant.State
		if s == quant.DelayedScaling {
			states = []*quant.State{quant.NewState(r), quant.NewState(r), quant.NewState(r)}
		}
		res, err := New().QuantizeGrouped(context.Background(), quant.Request{Recipe: r, Role: quant.Gradient}, x, splits, states)
		if err := quant.CheckSplits(s, rows, splits, states); err != nil {
			if res != nil {
				t.Fatalf("misaligned splits %v quantized", splits)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	})
}
