// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/swizzle"
)

// nanEqual compares float32 scale_inv values treating NaNs as equal.
var nanEqual = cmp.Comparer(func(a, b float32) bool { return a == b || a != a && b != b })

func checkOperand(t *testing.T, name string, plan quant.Plan, got *quant.Operand, want oracleOperand) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s operand missing", name)
	}
	if got.Rows != want.rows || got.Cols != want.cols {
		t.Fatalf("%s shape [%d, %d], want [%d, %d]", name, got.Rows, got.Cols, want.rows, want.cols)
	}
	if got.ScaleRows != want.scaleRows || got.ScaleCols != want.scaleCols {
		t.Fatalf("%s scale shape [%d, %d], want [%d, %d]", name, got.ScaleRows, got.ScaleCols, want.scaleRows, want.scaleCols)
	}
	if len(got.Data) != got.Rows*got.RowStride() {
		t.Fatalf("%s data has %d bytes, want %d", name, len(got.Data), got.Rows*got.RowStride())
	}
	bad := 0
	for i := range want.rows {
		for j := range want.cols {
			if g, w := got.Code(i, j), want.codes[i*want.cols+j]; g != w {
				t.Errorf("%s code (%d, %d) = %#x, want %#x", name, i, j, g, w)
				if bad++; bad > 5 {
					t.FailNow()
				}
			}
		}
	}
	if got.Cols%2 == 1 && got.Element.Bits() == 4 {
		for i := range got.Rows {
			if p := got.Data[i*got.RowStride()+got.RowStride()-1] >> 4; p != 0 {
				t.Errorf("%s row %d padding nibble = %#x, want 0", name, i, p)
			}
		}
	}
	if want.scaleInv != nil {
		if diff := cmp.Diff(want.scaleInv, got.ScaleInv, nanEqual); diff != "" {
			t.Errorf("%s scale_inv (-want +got):\n%s", name, diff)
		}
	}
	if want.scaleCodes != nil {
		if diff := cmp.Diff(want.scaleCodes, got.ScaleCodes); diff != "" {
			t.Errorf("%s scale codes (-want +got):\n%s", name, diff)
		}
		src, r, c := want.scaleCodes, want.scaleRows, want.scaleCols
		if name == "columnwise" && plan.Scheme == quant.MXFP8BlockScaling {
			src, r, c = swizzle.Transpose(src, r, c), c, r
		}
		back, err := swizzle.Unswizzle(got.Swizzled, r, c)
		if err != nil {
			t.Fatalf("%s swizzled scales: %v", name, err)
		}
		if diff := cmp.Diff(src, back); diff != "" {
			t.Errorf("%s unswizzled scales (-want +got):\n%s", name, diff)
		}
	}
	if want.tensorS != 0 && got.Scale != want.tensorS {
		t.Errorf("%s tensor scale = %g, want %g", name, got.Scale, want.tensorS)
	}
}

// oddShapes are the shapes every recipe is checked on: single elements,
// partial blocks in both directions, and a wide row.
var oddShapes = [][2]int{{1, 1}, {1, 33}, {129, 17}, {7, 4096}, {40, 300}, {33, 16}, {256, 64}}

func TestQuantizeMatchesElementwiseOracle(t *testing.T) {
	ctx := context.Background()
	be := New()
	rng := rand.New(rand.NewPCG(11, 12))
	for _, rc := range allRecipes() {
		for _, role := range allRoles {
			for _, shape := range oddShapes {
				for _, dist := range inputKinds {
					name := fmt.Sprintf("%s/%s/%dx%d/%s", rc.name, role, shape[0], shape[1], dist.name)
					t.Run(name, func(t *testing.T) {
						x := dist.gen(rng, shape[0], shape[1])
						var st *quant.State
						if rc.recipe.Scheme == quant.DelayedScaling {
							st = quant.NewState(rc.recipe)
							st.Scale = 3.5 // as if after some steps
						}
						plan, err := rc.recipe.Plan(role)
						if err != nil {
							t.Fatal(err)
						}
						var want [2]oracleOperand
						if st != nil {
							want[0], want[1] = oracleQuantize(plan, x, st.Clone(), 42, 0)
						} else {
							want[0], want[1] = oracleQuantize(plan, x, nil, 42, 0)
						}
						res, err := be.Quantize(ctx, quant.Request{Recipe: rc.recipe, Role: role, State: st, Seed: 42}, x)
						if err != nil {
							t.Fatal(err)
						}
						checkOperand(t, "rowwise", plan, res.Rowwise, want[0])
						checkOperand(t, "columnwise", plan, res.Columnwise, want[1])
						if a := oracleAmax(x, 0, x.Rows, 0, x.Cols); res.Amax != a {
							t.Errorf("Amax = %g, want %g", res.Amax, a)
						}
					})
				}
			}
		}
	}
}
