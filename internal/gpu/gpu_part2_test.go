// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package gpu

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/accuracy"
	"github.com/kquant/kquant/internal/quant/linear"
	"github.com/kquant/kquant/kernels"
)

// GPU tests of the backend's block FP8 and NVFP4 steps, the device scale
// swizzle, the grouped step and QuantizedLinear, against the reference
// backend.

// part2Cases are the small shapes in every input type, with and without
// special values, then the big shapes in BF16 (KQUANT_BIG=0 drops them).
func part2Cases() []fp8Case {
	var out []fp8Case
	for _, sh := range smallShapes {
		for _, dt := range dtypes {
			for _, sp := range []bool{false, true} {
				out = append(out, fp8Case{sh: sh, dt: dt, specials: sp})
			}
		}
	}
	for _, sh := range bigShapes() {
		out = append(out, fp8Case{sh: sh, dt: kernels.BF16, specials: true})
	}
	return out
}

func big(sh shape) bool { return sh.rows*sh.cols > 1<<22 }

// quantizeBoth runs one request on both backends and reports a mismatch;
// it returns whether the results are byte-identical.
func quantizeBoth(t *testing.T, req quant.Request, x quant.Tensor, deq bool) bool {
	t.Helper()
	ctx := context.Background()
	got, err := gb.Quantize(ctx, req, x)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Quantize(ctx, req, x)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(got, want); d != "" {
		t.Errorf("not bit-exact:%s", d)
		return false
	}
	if deq {
		checkDequantize(t, got)
	}
	return true
}

// TestBlockScaling: Float8BlockScaling through the backend, 1x128 (Input,
// Gradient under HYBRID: E5M2) and 128x128 (Weight), power-of-2 and float32
// scales, an epsilon, every usage.
func TestBlockScaling(t *testing.T) {
	var cnt counter
	for i, cs := range part2Cases() {
		x := makeInput(cs.sh, cs.dt, cs.specials, uint64(11000+i))
		for _, role := range []quant.TensorRole{quant.Input, quant.Gradient, quant.Weight} {
			for _, u := range usages {
				if big(cs.sh) && u != quant.UsageBoth {
					continue
				}
				r := quant.DefaultRecipe(quant.Float8BlockScaling)
				r.Format = quant.FormatHybrid
				r.Block.Power2Scales = (i+int(u))%2 == 0
				if i%7 == 3 {
					r.Block.AmaxEpsilon = 1e-6
				}
				t.Run(fmt.Sprintf("%v/%s/usage=%d/pow2=%v", cs, role, u, r.Block.Power2Scales), func(t *testing.T) {
					cnt.add(quantizeBoth(t, quant.Request{Recipe: r, Role: role, Usage: u}, x, u == quant.UsageBoth && !big(cs.sh)))
				})
			}
		}
	}
	t.Logf("block FP8 backend: %d of %d cases bit-exact with the reference (codes, scale_inv, amax; dequantize equal)", cnt.exact, cnt.total)
}

// TestNVFP4Backend: NVFP4 through the backend for the three roles (Input:
// RHT on the columnwise operand; Gradient: RHT and stochastic rounding;
// Weight: 16x16 tiles), every usage, plus the options off one at a time
// and another RHT sign vector.
func TestNVFP4Backend(t *testing.T) {
	type variant struct {
		name          string
		rht, sr, twoD bool
		signs         uint16
		roles         []quant.TensorRole
		smallOnly     bool
	}
	def := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	all := []quant.TensorRole{quant.Input, quant.Gradient, quant.Weight}
	variants := []variant{
		{name: "default", rht: true, sr: true, twoD: true, signs: def.NVFP4.RHTSignMask, roles: all},
		{name: "no-rht", sr: true, twoD: true, signs: def.NVFP4.RHTSignMask, roles: []quant.TensorRole{quant.Gradient}, smallOnly: true},
		{name: "no-sr", rht: true, twoD: true, signs: def.NVFP4.RHTSignMask, roles: []quant.TensorRole{quant.Gradient}, smallOnly: true},
		{name: "1d-weights", rht: true, sr: true, signs: def.NVFP4.RHTSignMask, roles: []quant.TensorRole{quant.Weight}, smallOnly: true},
		{name: "signs", rht: true, sr: true, twoD: true, signs: 0x5A3C, roles: []quant.TensorRole{quant.Input}, smallOnly: true},
	}
	var cnt counter
	for i, cs := range part2Cases() {
		x := makeInput(cs.sh, cs.dt, cs.specials, uint64(13000+i))
		for _, v := range variants {
			if v.smallOnly && big(cs.sh) {
				continue
			}
			r := def
			r.NVFP4.RandomHadamardTransform, r.NVFP4.StochasticRounding, r.NVFP4.TwoDimensionalWeights, r.NVFP4.RHTSignMask = v.rht, v.sr, v.twoD, v.signs
			for _, role := range v.roles {
				for _, u := range usages {
					if big(cs.sh) && u != quant.UsageBoth {
						continue
					}
					seed := uint64(0x5EED0000) + uint64(i)*7 + uint64(u)
					t.Run(fmt.Sprintf("%v/%s/%s/usage=%d", cs, v.name, role, u), func(t *testing.T) {
						cnt.add(quantizeBoth(t, quant.Request{Recipe: r, Role: role, Usage: u, Seed: seed}, x, u == quant.UsageBoth && !big(cs.sh)))
					})
				}
			}
		}
	}
	t.Logf("NVFP4 backend: %d of %d cases bit-exact with the reference (packed codes, E4M3 scales, swizzled scales, amaxes; dequantize equal)", cnt.exact, cnt.total)
}

// TestGraphReplayPart2 captures each new step once and replays it on 3
// inputs; every replay must equal an eager run of another step and the
// reference (NVFP4's stochastic rounding with the seed captured).
func TestGraphReplayPart2(t *testing.T) {
	ctx := context.Background()
	sh := shape{1024, 768}
	type rc struct {
		name string
		r    quant.Recipe
		role quant.TensorRole
	}
	cases := []rc{
		{"block-1x128", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Input},
		{"block-128x128", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Weight},
		{"nvfp4-input", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Input},
		{"nvfp4-gradient", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Gradient},
		{"nvfp4-weight-2d", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Weight},
		{"mxfp8-device-swizzle", quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input},
		{"mxfp8-weight-2d", mxfp82D(quant.ScaleRoundingTE), quant.Weight},
	}
	inputs := make([]quant.Tensor, 3)
	for k := range inputs {
		inputs[k] = makeInput(sh, kernels.BF16, k == 1, uint64(900+k))
	}
	const seed = 4242
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Request: quant.Request{Recipe: tc.r, Role: tc.role, Seed: seed}, Rows: sh.rows, Cols: sh.cols, Input: kernels.BF16}
			steps := make([]*Step, 2)
			for j := range steps {
				s, err := gb.NewStep(ctx, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				s.parts[0].seed = seed
				steps[j] = s
			}
			for k, x := range inputs {
				snaps := runEagerAndGraph(ctx, t, steps, x)
				if !bytes.Equal(snaps[0], snaps[1]) {
					t.Errorf("replay %d: %s", k, bytesDiff("outputs", snaps[1], snaps[0]))
					continue
				}
				got, err := steps[1].Result(ctx, 0)
				if err != nil {
					t.Fatal(err)
				}
				want, err := ref.Quantize(ctx, quant.Request{Recipe: tc.r, Role: tc.role, Seed: seed}, x)
				if err != nil {
					t.Fatal(err)
				}
				if d := diff(got, want); d != "" {
					t.Errorf("replay %d vs reference: %s", k, d)
					continue
				}
				t.Logf("replay %d: %d output bytes (%d launches) equal to the eager run and the reference", k, len(snaps[1]), steps[1].Kernels())
			}
		})
	}
}

// groupedSplits64 returns three 64-group split vectors adding up to rows
// (multiples of 128, some groups empty).
func groupedSplits64(rows int) [][]int32 {
	const g = 64
	units := rows / 128
	uniform := make([]int32, g)
	for i := range uniform {
		uniform[i] = int32(rows / g)
	}
	rng := rand.New(rand.NewPCG(21, 22))
	random := make([]int32, g)
	for range units {
		random[rng.IntN(g/2)*2] += 128
	}
	skewed := make([]int32, g)
	skewed[5] = int32(units/2) * 128
	for u := 0; u < units-units/2; u++ {
		skewed[(u*7)%g] += 128
	}
	return [][]int32{uniform, random, skewed}
}

func ints(v []int32) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// TestGroupedStep: the 64-group step with the split sizes in device memory
// (NVFP4 gradient rowwise: per-group amax and stochastic-rounding stream;
// block FP8 1x128 rowwise, both operands, and columnwise alone). Eager runs with 3 split vectors equal the
// reference; then ONE captured graph is replayed with the 3 vectors (only
// the device split buffer changes) and equals the eager runs; then a
// misaligned group and a short split vector are reported, not crashed.
func TestGroupedStep(t *testing.T) {
	hybrid := quant.DefaultRecipe(quant.Float8BlockScaling)
	hybrid.Format, hybrid.Block.Power2Scales = quant.FormatHybrid, false
	groupedStepCases(t, []groupedCase{
		{"nvfp4-gradient-sr-rowwise", quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Gradient, quant.UsageRowwise},
		{"block-1x128-rowwise", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Input, quant.UsageRowwise},
		{"block-1x128-both", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Input, quant.UsageBoth},
		{"block-128x1-columnwise-e5m2-f32scales", hybrid, quant.Gradient, quant.UsageColumnwise},
	})
}

// TestGroupedStepBlock2D: the 64-group block FP8 128x128 weight step on
// kernels.GroupedBlock2D (both operands, columnwise alone, rowwise alone
// with float32 scales), as TestGroupedStep: 3 split vectors equal to the
// reference, ONE captured graph replayed with them equal to the eager
// runs, misaligned and short vectors reported.
func TestGroupedStepBlock2D(t *testing.T) {
	f32 := quant.DefaultRecipe(quant.Float8BlockScaling)
	f32.Block.Power2Scales = false
	groupedStepCases(t, []groupedCase{
		{"block-128x128-weight-both", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Weight, quant.UsageBoth},
		{"block-128x128-weight-columnwise", quant.DefaultRecipe(quant.Float8BlockScaling), quant.Weight, quant.UsageColumnwise},
		{"block-128x128-weight-rowwise-f32scales", f32, quant.Weight, quant.UsageRowwise},
		{"block-128x128-weight-both-f32scales", f32, quant.Weight, quant.UsageBoth},
	})
}

// TestGroupedStepNVFP4: the 64-group NVFP4 steps on kernels.GroupedNVFP4
// and GroupedNVFP4TwoD (every operand grouped, split sizes in device
// memory): the gradient role's both operands and columnwise alone (RHT,
// stochastic rounding on each group's stream), the input role's (RHT) and
// 16x16 weights, both operands and columnwise alone; as TestGroupedStep:
// 3 split vectors equal to the reference, ONE captured graph replayed
// with them equal to the eager runs, misaligned and short vectors
// reported.
func TestGroupedStepNVFP4(t *testing.T) {
	nv := quant.DefaultRecipe(quant.NVFP4BlockScaling)
	groupedStepCases(t, []groupedCase{
		{"nvfp4-gradient-both-rht-sr", nv, quant.Gradient, quant.UsageBoth},
		{"nvfp4-gradient-columnwise-rht-sr", nv, quant.Gradient, quant.UsageColumnwise},
		{"nvfp4-input-both-rht", nv, quant.Input, quant.UsageBoth},
		{"nvfp4-weight-2d-both", nv, quant.Weight, quant.UsageBoth},
		{"nvfp4-weight-2d-columnwise", nv, quant.Weight, quant.UsageColumnwise},
	})
}

// TestGroupedFP8Kernels checks the backend's use of kquantize's grouped
// current-scaling and MXFP8 kernels (the default path): the 64-group
// step through one graph, and QuantizeGrouped for every role and usage,
// against the reference.
func TestGroupedFP8Kernels(t *testing.T) {
	ocp := quant.DefaultRecipe(quant.MXFP8BlockScaling)
	ocp.Format, ocp.MXFP8.ScaleRounding = quant.FormatHybrid, quant.ScaleRoundingOCP
	cur := quant.DefaultRecipe(quant.Float8CurrentScaling)
	curP2 := cur
	curP2.Current.Power2Scales, curP2.Current.AmaxEpsilon = true, 1e-6
	groupedStepCases(t, []groupedCase{
		{"current-both", cur, quant.Input, quant.UsageBoth},
		{"current-gradient-e5m2-rowwise-pow2", curP2, quant.Gradient, quant.UsageRowwise},
		{"current-columnwise", cur, quant.Weight, quant.UsageColumnwise},
		{"mxfp8-both", quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input, quant.UsageBoth},
		{"mxfp8-gradient-ocp-rowwise", ocp, quant.Gradient, quant.UsageRowwise},
		{"mxfp8-columnwise", quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input, quant.UsageColumnwise},
	})
	ctx := context.Background()
	x := makeInput(shape{640, 96}, kernels.BF16, true, 98)
	var cnt counter
	for _, s := range []quant.Scheme{quant.Float8CurrentScaling, quant.MXFP8BlockScaling} {
		// Groups of 16 (current) and 32 rows (MXFP8) multiples, not of
		// 128: the MXFP8 scale matrices pad each group.
		splits := map[quant.Scheme][]int{quant.Float8CurrentScaling: {48, 0, 272, 160, 160}, quant.MXFP8BlockScaling: {96, 0, 288, 128, 128}}[s]
		for _, role := range []quant.TensorRole{quant.Input, quant.Weight, quant.Gradient} {
			for _, u := range usages {
				t.Run(fmt.Sprintf("QuantizeGrouped/%s/%s/usage=%d", s, role, u), func(t *testing.T) {
					r := quant.DefaultRecipe(s)
					r.Format = quant.FormatHybrid
					req := quant.Request{Recipe: r, Role: role, Usage: u}
					got, err := gb.QuantizeGrouped(ctx, req, x, splits, nil)
					if err != nil {
						t.Fatal(err)
					}
					want, err := ref.QuantizeGrouped(ctx, req, x, splits, nil)
					if err != nil {
						t.Fatal(err)
					}
					ok := true
					for g := range want {
						if d := diff(got[g], want[g]); d != "" {
							t.Errorf("group %d: %s", g, d)
							ok = false
						}
					}
					cnt.add(ok)
				})
			}
		}
	}
	t.Logf("QuantizeGrouped with the grouped current/MXFP8 kernels: %d of %d cases bit-exact with the reference", cnt.exact, cnt.total)
}

type groupedCase struct {
	name  string
	r     quant.Recipe
	role  quant.TensorRole
	usage quant.Usage
}

// runEagerAndGraph sets x as the input of steps[0] and steps[1] (two
// steps of one configuration), runs the first eagerly and the second as a
// replay of its graph, and returns their Snapshots.
func runEagerAndGraph(ctx context.Context, t *testing.T, steps []*Step, x quant.Tensor) [2][]byte {
	t.Helper()
	var snaps [2][]byte
	for j, s := range steps[:2] {
		if err := s.SetInput(ctx, 0, x); err != nil {
			t.Fatal(err)
		}
		if err := s.Run(ctx, j == 1); err != nil {
			t.Fatal(err)
		}
		var err error
		if snaps[j], err = s.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return snaps
}

// runMisaligned replays grouped step s with base's group 9 shifted by d
// rows into group 10 (a size that breaks the alignment) and expects the
// step's alignment flag to name group 9.
func runMisaligned(ctx context.Context, t *testing.T, s *Step, base []int32, d int32) {
	t.Helper()
	misaligned := append([]int32(nil), base...)
	misaligned[9], misaligned[10] = misaligned[9]-d, misaligned[10]+d
	if err := s.SetSplits(ctx, misaligned); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := s.GroupError(ctx); err == nil || !strings.Contains(err.Error(), "group 9") {
		t.Errorf("misaligned group 9: error %v", err)
	} else {
		t.Logf("misaligned split reported: %v", err)
	}
}

// runWithSplits sets grouped step s's device split sizes to sp (split
// vector k), runs it eagerly (then checks its alignment flag) or as a
// replay of its graph, and returns its Snapshot.
func runWithSplits(ctx context.Context, t *testing.T, s *Step, k int, sp []int32, graph bool) []byte {
	t.Helper()
	if err := s.SetSplits(ctx, sp); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(ctx, graph); err != nil {
		t.Fatal(err)
	}
	if !graph {
		if err := s.GroupError(ctx); err != nil {
			t.Fatalf("split vector %d: %v", k, err)
		}
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// groupedStepCases runs each case's 64-group step over 16384x256: eager
// runs with 3 split vectors equal to the reference, ONE captured graph
// replayed with the 3 vectors equal to the eager runs, a misaligned group
// and a short split vector reported, and a good replay after them.
func groupedStepCases(t *testing.T, cases []groupedCase) {
	ctx := context.Background()
	const rows, cols, groups, seed = 16384, 256, 64, 77
	x := makeInput(shape{rows, cols}, kernels.BF16, true, 31337)
	splits := groupedSplits64(rows)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := quant.Request{Recipe: tc.r, Role: tc.role, Usage: tc.usage, Seed: seed}
			s, err := gb.NewGroupedStep(ctx, GroupedConfig{Request: req, Rows: rows, Cols: cols, Input: kernels.BF16, Splits: ints(splits[0])})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.SetInput(ctx, 0, x); err != nil {
				t.Fatal(err)
			}
			var eager [][]byte
			for k, sp := range splits {
				snap := runWithSplits(ctx, t, s, k, sp, false)
				eager = append(eager, snap)
				got, err := s.GroupResults(ctx)
				if err != nil {
					t.Fatal(err)
				}
				want, err := ref.QuantizeGrouped(ctx, req, x, ints(sp), nil)
				if err != nil {
					t.Fatal(err)
				}
				bad := 0
				for g := range want {
					if d := diff(got[g], want[g]); d != "" {
						if bad < 3 {
							t.Errorf("split vector %d, group %d (%d rows): %s", k, g, sp[g], d)
						}
						bad++
					}
				}
				t.Logf("split vector %d: eager grouped step (%d launches), %d of %d groups bit-exact with the reference", k, s.Kernels(), groups-bad, groups)
			}
			for k, sp := range splits {
				snap := runWithSplits(ctx, t, s, k, sp, true)
				if !bytes.Equal(snap, eager[k]) {
					t.Errorf("graph replay %d: %s", k, bytesDiff("outputs", snap, eager[k]))
				} else {
					t.Logf("graph replay %d: %d output bytes equal to the eager run (one captured graph, %d launches)", k, len(snap), s.Kernels())
				}
			}
			runMisaligned(ctx, t, s, splits[0], 28)
			short := append([]int32(nil), splits[0]...)
			short[3] -= 128
			if err := s.SetSplits(ctx, short); err != nil {
				t.Fatal(err)
			}
			if err := s.Run(ctx, true); err != nil {
				t.Fatal(err)
			}
			if err := s.GroupError(ctx); err == nil {
				t.Errorf("split sizes short of the rows: no error")
			} else {
				t.Logf("short split reported: %v", err)
			}
			// The step still works after the bad vectors.
			if err := s.SetSplits(ctx, splits[1]); err != nil {
				t.Fatal(err)
			}
			if err := s.Run(ctx, true); err != nil {
				t.Fatal(err)
			}
			if snap, err := s.Snapshot(ctx); err != nil || !bytes.Equal(snap, eager[1]) {
				t.Errorf("replay after the bad vectors differs from the eager run (err %v)", err)
			}
		})
	}
}

// TestQuantizeGroupedAll: Backend.QuantizeGrouped for every scheme and
// role with both operands (grouped kernels for what has one, per-group
// launches for the rest, the reference for NVFP4's stochastically rounded
// columnwise operand) equals the reference, delayed-scaling states
// included.
func TestQuantizeGroupedAll(t *testing.T) {
	ctx := context.Background()
	x := makeInput(shape{640, 96}, kernels.BF16, true, 99)
	splits := []int{128, 0, 256, 128, 128}
	var cnt counter
	for _, s := range quant.Schemes() {
		for _, role := range []quant.TensorRole{quant.Input, quant.Weight, quant.Gradient} {
			for _, u := range usages {
				t.Run(fmt.Sprintf("%s/%s/usage=%d", s, role, u), func(t *testing.T) {
					r := quant.DefaultRecipe(s)
					var stG, stR []*quant.State
					if s == quant.DelayedScaling {
						for range splits {
							stG, stR = append(stG, quant.NewState(r)), append(stR, quant.NewState(r))
						}
					}
					req := quant.Request{Recipe: r, Role: role, Usage: u, Seed: 5}
					got, err := gb.QuantizeGrouped(ctx, req, x, splits, stG)
					if err != nil {
						t.Fatal(err)
					}
					want, err := ref.QuantizeGrouped(ctx, req, x, splits, stR)
					if err != nil {
						t.Fatal(err)
					}
					ok := true
					for g := range want {
						if d := diff(got[g], want[g]); d != "" {
							t.Errorf("group %d: %s", g, d)
							ok = false
						}
						if stG != nil && !sameState(stG[g], stR[g]) {
							t.Errorf("group %d: state differs", g)
							ok = false
						}
					}
					cnt.add(ok)
				})
			}
		}
	}
	t.Logf("QuantizeGrouped: %d of %d scheme/role/usage cases bit-exact with the reference", cnt.exact, cnt.total)
}

// TestQuantizedLinearGPU runs QuantizedLinear on the GPU for every recipe
// and compares with linear.Run on the reference backend: the quantized
// operands byte for byte, each output element within the float32
// summation-order bound 2·K·2^-24·Σ|x̂·ŵ|, and the output SNR within 0.01
// dB.
func TestQuantizedLinearGPU(t *testing.T) {
	ctx := context.Background()
	for _, sh := range []struct{ m, n, k int }{{256, 384, 512}, {129, 65, 300}, {1000, 77, 1024}} {
		var recipes []quant.Recipe
		for _, scheme := range quant.Schemes() {
			recipes = append(recipes, quant.DefaultRecipe(scheme))
		}
		recipes = append(recipes, mxfp82D(quant.ScaleRoundingTE))
		for _, recipe := range recipes {
			name := string(recipe.Scheme)
			if recipe.Scheme == quant.MXFP8BlockScaling && recipe.MXFP8.TwoDimensionalWeights {
				name += "-2d"
			}
			t.Run(fmt.Sprintf("%dx%dx%d/%s", sh.m, sh.n, sh.k, name), func(t *testing.T) {
				X := moderate(makeInput(shape{sh.m, sh.k}, kernels.F32, false, uint64(sh.m)))
				W := moderate(makeInput(shape{sh.n, sh.k}, kernels.F32, false, uint64(sh.n+1)))
				req := linear.Request{Recipe: recipe, X: X, W: W, Seed: 3}
				want, err := linear.Run(ctx, ref, req)
				if err != nil {
					t.Fatal(err)
				}
				got, err := gb.QuantizedLinear(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				if d := diff(got.X, want.X); d != "" {
					t.Errorf("quantized X: %s", d)
				}
				if d := diff(got.W, want.W); d != "" {
					t.Errorf("quantized W: %s", d)
				}
				xd, _ := ref.Dequantize(ctx, want.X, quant.UsageRowwise)
				wd, _ := ref.Dequantize(ctx, want.W, quant.UsageRowwise)
				worst := 0.0
				for i := range got.Y.Data {
					mi, nj := i/sh.n, i%sh.n
					var abs float64
					for kk := range sh.k {
						abs += math.Abs(float64(xd.Data[mi*sh.k+kk]) * float64(wd.Data[nj*sh.k+kk]))
					}
					bound := 2 * float64(sh.k) * 0x1p-24 * abs
					d := math.Abs(float64(got.Y.Data[i]) - float64(want.Y.Data[i]))
					if d > bound {
						t.Fatalf("y[%d,%d] = %g, reference %g: difference %g over the bound %g", mi, nj, got.Y.Data[i], want.Y.Data[i], d, bound)
					}
					if bound > 0 {
						worst = max(worst, d/bound)
					}
				}
				if math.Abs(got.Output.SNRdB-want.Output.SNRdB) > 0.01 {
					t.Errorf("SNR %.4f dB, reference %.4f dB", got.Output.SNRdB, want.Output.SNRdB)
				}
				// The same comparison against the reference's exact product.
				m2, err := accuracy.Compare(want.Exact, got.Y)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("SNR %.4f dB (reference %.4f dB; GPU Y vs reference Exact %.4f dB); largest difference %.3g of the bound", got.Output.SNRdB, want.Output.SNRdB, m2.SNRdB, worst)
			})
		}
	}
}

// moderate folds values into (-8, 8): the wide-range inputs of the byte
// tests make SNR meaningless.
func moderate(x quant.Tensor) quant.Tensor {
	for i, v := range x.Data {
		x.Data[i] = float32(math.Mod(float64(v), 8))
	}
	return x
}
