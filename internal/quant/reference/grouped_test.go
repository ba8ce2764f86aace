// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/internal/quant"
)

func TestQuantizeGroupedMatchesPerGroupOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	ctx := context.Background()
	for _, rc := range allRecipes() {
		for _, role := range allRoles {
			t.Run(fmt.Sprintf("%s/%s", rc.name, role), func(t *testing.T) {
				align := rc.recipe.Scheme.GroupAlignment()
				splits := []int{align, 0, 2 * align}
				x := randomTensor(rng, 3*align, 40)
				var states []*quant.State
				if rc.recipe.Scheme == quant.DelayedScaling {
					for g := range splits {
						st := quant.NewState(rc.recipe)
						st.Scale = float32(g + 2)
						states = append(states, st)
					}
				}
				var before []*quant.State
				for _, st := range states {
					before = append(before, st.Clone())
				}
				res, err := New().QuantizeGrouped(ctx, quant.Request{Recipe: rc.recipe, Role: role, Seed: 5}, x, splits, states)
				if err != nil {
					t.Fatal(err)
				}
				plan, _ := rc.recipe.Plan(role)
				off := 0
				for g, n := range splits {
					sub := x.RowSlice(off, off+n)
					var st *quant.State
					if before != nil {
						st = before[g]
					}
					wr, wc := oracleQuantize(plan, sub, st, 5, uint32(g))
					checkOperand(t, "rowwise", plan, res[g].Rowwise, wr)
					checkOperand(t, "columnwise", plan, res[g].Columnwise, wc)
					if states != nil {
						if want := oracleAmax(sub, 0, n, 0, sub.Cols); states[g].AmaxHistory[0] != want {
							t.Errorf("group %d recorded amax %g, want %g", g, states[g].AmaxHistory[0], want)
						}
					}
					off += n
				}
			})
		}
	}
}

func TestQuantizeGroupedErrorsNameTheGroup(t *testing.T) {
	ctx := context.Background()
	x := quant.NewTensor(96, 8)
	cases := []struct {
		name    string
		scheme  quant.Scheme
		splits  []int
		wantSub string
	}{
		{"mxfp8", quant.MXFP8BlockScaling, []int{32, 48, 16}, "group 1 has 48 rows, not a multiple of 32"},
		{"nvfp4", quant.NVFP4BlockScaling, []int{96}, "group 0 has 96 rows, not a multiple of 128"},
		{"block", quant.Float8BlockScaling, []int{0, 96}, "group 1 has 96 rows, not a multiple of 128"},
		{"current", quant.Float8CurrentScaling, []int{16, 16, 64, 0, 0}, ""},
		{"current misaligned", quant.Float8CurrentScaling, []int{16, 8, 72}, "group 1 has 8 rows, not a multiple of 16"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New().QuantizeGrouped(ctx, quant.Request{Recipe: quant.DefaultRecipe(tc.scheme), Role: quant.Input}, x, tc.splits, nil)
			switch {
			case tc.wantSub == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tc.wantSub != "" && (err == nil || !strings.Contains(err.Error(), tc.wantSub)):
				t.Errorf("error %v, want one containing %q", err, tc.wantSub)
			}
		})
	}
	r := quant.DefaultRecipe(quant.DelayedScaling)
	if _, err := New().QuantizeGrouped(ctx, quant.Request{Recipe: r, Role: quant.Input, State: quant.NewState(r)}, x, []int{96}, []*quant.State{quant.NewState(r)}); err == nil {
		t.Error("Request.State in a grouped quantize accepted")
	}
}

func TestDequantizeSNRPerRecipe(t *testing.T) {
	// Every operand of every recipe dequantizes close to what it quantized
	// (for the RHT operand: the transformed transpose).
	minSNR := map[string]float64{"E4M3": 28, "E5M2": 20, "E2M1": 14}
	rng := rand.New(rand.NewPCG(31, 32))
	ctx := context.Background()
	for _, rc := range allRecipes() {
		for _, role := range allRoles {
			t.Run(fmt.Sprintf("%s/%s", rc.name, role), func(t *testing.T) {
				x := quant.NewTensor(64, 96)
				for i := range x.Data {
					x.Data[i] = float32(rng.NormFloat64())
				}
				var st *quant.State
				if rc.recipe.Scheme == quant.DelayedScaling {
					st = quant.NewState(rc.recipe)
					st.Scale = 448.0 / 5
				}
				res, err := New().Quantize(ctx, quant.Request{Recipe: rc.recipe, Role: role, State: st}, x)
				if err != nil {
					t.Fatal(err)
				}
				for _, u := range []quant.Usage{quant.UsageRowwise, quant.UsageColumnwise} {
					o := res.Operand(u)
					want := x
					if o.Transposed {
						want = oracleTranspose(x)
					}
					if o.RHT {
						want = oracleRHT(want, o.RHTSignMask)
					}
					got, err := New().Dequantize(ctx, res, u)
					if err != nil {
						t.Fatal(err)
					}
					if got.Rows != want.Rows || got.Cols != want.Cols {
						t.Fatalf("%s dequantized [%d, %d], want [%d, %d]", u, got.Rows, got.Cols, want.Rows, want.Cols)
					}
					var sig, noise float64
					for i := range want.Data {
						d := float64(want.Data[i] - got.Data[i])
						sig += float64(want.Data[i]) * float64(want.Data[i])
						noise += d * d
					}
					snr := 10 * log10(sig/noise)
					if snr < minSNR[o.Element.String()] {
						t.Errorf("%s SNR %.1f dB below %.0f", u, snr, minSNR[o.Element.String()])
					}
				}
			})
		}
	}
}

func TestUsageSelectsOperands(t *testing.T) {
	x := quant.NewTensor(32, 32)
	for _, rc := range allRecipes() {
		for _, u := range []quant.Usage{quant.UsageRowwise, quant.UsageColumnwise} {
			var st *quant.State
			if rc.recipe.Scheme == quant.DelayedScaling {
				st = quant.NewState(rc.recipe)
			}
			res, err := New().Quantize(context.Background(), quant.Request{Recipe: rc.recipe, Role: quant.Weight, Usage: u, State: st}, x)
			if plan, _ := rc.recipe.Plan(quant.Weight); plan.CheckUsage(u) != nil {
				// A usage TE refuses for this recipe (4over6 16x16 weights
				// without their rowwise operand).
				if err == nil {
					t.Errorf("%s usage %d: accepted, want %v", rc.name, u, plan.CheckUsage(u))
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if (res.Rowwise != nil) != (u == quant.UsageRowwise) || (res.Columnwise != nil) != (u == quant.UsageColumnwise) {
				t.Errorf("%s usage %d: rowwise %v columnwise %v", rc.name, u, res.Rowwise != nil, res.Columnwise != nil)
			}
			if _, err := New().Dequantize(context.Background(), res, quant.UsageBoth&^u); err == nil {
				t.Errorf("%s: dequantizing the missing operand succeeded", rc.name)
			}
		}
	}
}

func TestQuantizeEdgeInputs(t *testing.T) {
	ctx := context.Background()
	for _, rc := range allRecipes() {
		t.Run(rc.name, func(t *testing.T) {
			newReq := func() quant.Request {
				req := quant.Request{Recipe: rc.recipe, Role: quant.Gradient}
				if rc.recipe.Scheme == quant.DelayedScaling {
					req.State = quant.NewState(rc.recipe)
				}
				return req
			}
			for _, shape := range [][2]int{{0, 0}, {0, 5}, {5, 0}} {
				res, err := New().Quantize(ctx, newReq(), quant.NewTensor(shape[0], shape[1]))
				if err != nil {
					t.Fatalf("shape %v: %v", shape, err)
				}
				if len(res.Rowwise.Data) != 0 {
					t.Errorf("shape %v: %d data bytes", shape, len(res.Rowwise.Data))
				}
			}
			if _, err := New().Quantize(ctx, newReq(), quant.Tensor{Rows: 2, Cols: 2}); err == nil {
				t.Error("tensor without data accepted")
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := New().Quantize(cctx, newReq(), quant.NewTensor(4, 4)); err == nil {
				t.Error("cancelled context ignored")
			}
		})
	}
}

func TestResultsDoNotAliasTheInput(t *testing.T) {
	x := quant.NewTensor(32, 32)
	x.Data[0] = 1
	res, err := New().Quantize(context.Background(), quant.Request{Recipe: quant.DefaultRecipe(quant.MXFP8BlockScaling), Role: quant.Input}, x)
	if err != nil {
		t.Fatal(err)
	}
	before := append([]byte(nil), res.Columnwise.Data...)
	res.Rowwise.Data[0] = 0xFF
	if diff := cmp.Diff(before, res.Columnwise.Data); diff != "" {
		t.Errorf("operands share memory:\n%s", diff)
	}
}
