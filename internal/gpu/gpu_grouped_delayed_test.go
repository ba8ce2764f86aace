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
	"testing"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/kernels"
)

// delayedSplits returns three 64-group split vectors of 16-row multiples
// adding up to rows: uniform, random (about a third of the groups empty)
// and skewed (one group half the rows, most groups empty).
func delayedSplits(rows int) [][]int32 {
	const g = 64
	units := rows / 16
	uniform := make([]int32, g)
	for i := range uniform {
		uniform[i] = int32(rows / g)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	random := make([]int32, g)
	for range units {
		k := rng.IntN(g)
		if k%3 == 1 {
			k--
		}
		random[k] += 16
	}
	skewed := make([]int32, g)
	skewed[5] = int32(units/2) * 16
	for u := 0; u < units-units/2; u++ {
		skewed[(u*7)%g%20] += 16
	}
	return [][]int32{uniform, random, skewed}
}

// delayedStates returns per-group states: scales from 2^-8 to 2^8, some
// histories zero, others of earlier amaxes.
func delayedStates(r quant.Recipe, groups int, seed uint64) []*quant.State {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]*quant.State, groups)
	for g := range out {
		st := quant.NewState(r)
		st.Scale = float32(math.Ldexp(1+rng.Float64(), rng.IntN(17)-8))
		if g%4 != 3 {
			for k := range st.AmaxHistory {
				if rng.IntN(3) != 0 {
					st.AmaxHistory[k] = float32(math.Ldexp(rng.Float64(), rng.IntN(30)-10))
				}
			}
		}
		out[g] = st
	}
	return out
}

func cloneAll(s []*quant.State) []*quant.State {
	out := make([]*quant.State, len(s))
	for i, st := range s {
		out[i] = st.Clone()
	}
	return out
}

type delayedCase struct {
	name       string
	dt         kernels.DType
	hybrid     bool
	role       quant.TensorRole
	usage      quant.Usage
	endStep    bool
	histLen    int
	margin     int
	mostRecent bool
	cols       int
	specials   bool
}

func (c delayedCase) recipe() quant.Recipe {
	r := quant.DefaultRecipe(quant.DelayedScaling)
	if c.hybrid {
		r.Format = quant.FormatHybrid
	}
	r.Delayed = quant.DelayedOptions{Margin: c.margin, AmaxHistoryLen: c.histLen, AmaxComputeAlgo: quant.AmaxComputeMax}
	if c.mostRecent {
		r.Delayed.AmaxComputeAlgo = quant.AmaxComputeMostRecent
	}
	return r
}

// TestGroupedDelayed: the 64-group DelayedScaling step with the split sizes
// in device memory (kernels.GroupedDelayed: offsets, one fused
// cast(+transpose)+amax pass, the per-group history update). For each case
// three steps run eagerly, one per split vector, the groups' states
// carried on the device from step to step; results and states equal the
// reference's QuantizeGrouped (with EndStep also each group's
// State.Update) after every step. Then the states are set back and ONE
// captured graph replays the three split vectors (only the device split
// buffer changes between replays): every output and state byte equals
// the eager run's. A misaligned group is then reported by name and
// changes nothing; QuantizeGrouped (with states) equals the reference.
func TestGroupedDelayed(t *testing.T) {
	ctx := context.Background()
	const rows, groups = 4096, 64
	splits := delayedSplits(rows)
	cases := []delayedCase{
		{"bf16-e4m3-both-endstep-h1024-max", kernels.BF16, false, quant.Input, quant.UsageBoth, true, 1024, 0, false, 136, true},
		{"bf16-hybrid-grad-rowwise-h1-recent-m1", kernels.BF16, true, quant.Gradient, quant.UsageRowwise, false, 1, 1, true, 136, false},
		{"f32-hybrid-input-both-endstep-h1-recent-m2-cols100", kernels.F32, true, quant.Input, quant.UsageBoth, true, 1, 2, true, 100, false},
		{"f16-e4m3-weight-columnwise-endstep-h16", kernels.F16, false, quant.Weight, quant.UsageColumnwise, true, 16, 0, false, 256, true},
		{"f16-hybrid-grad-rowwise-endstep-h1024-m3", kernels.F16, true, quant.Gradient, quant.UsageRowwise, true, 1024, 3, false, 96, false},
		{"f32-e4m3-rowwise-h1024-cols8", kernels.F32, false, quant.Input, quant.UsageRowwise, false, 1024, 0, false, 8, true},
		{"bf16-hybrid-grad-both-h4-cols264", kernels.BF16, true, quant.Gradient, quant.UsageBoth, false, 4, 0, false, 264, false},
		{"f32-e4m3-both-endstep-h2-recent-cols33", kernels.F32, false, quant.Input, quant.UsageBoth, true, 2, 1, true, 33, true},
	}
	var steps, exact counter
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.recipe()
			x := makeInput(shape{rows, tc.cols}, tc.dt, tc.specials, uint64(700+ci))
			if !tc.specials {
				x = moderate(x)
			}
			req := quant.Request{Recipe: r, Role: tc.role, Usage: tc.usage}
			st0 := delayedStates(r, groups, uint64(ci))
			s, err := gb.NewGroupedStep(ctx, GroupedConfig{Request: req, Rows: rows, Cols: tc.cols, Input: tc.dt, Splits: ints(splits[0]), EndStep: tc.endStep})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if !s.grp.delayedKernel() {
				t.Fatalf("not the grouped delayed kernel: %d", s.grp.kernel)
			}
			if err := s.SetInput(ctx, 0, x); err != nil {
				t.Fatal(err)
			}
			setAll := func(sts []*quant.State) {
				for g, st := range sts {
					if err := s.SetState(ctx, g, st); err != nil {
						t.Fatal(err)
					}
				}
			}
			setAll(st0)
			stR := cloneAll(st0)
			var eager [][]byte
			for k, sp := range splits {
				snap := runWithSplits(ctx, t, s, k, sp, false)
				eager = append(eager, snap)
				var got []*quant.Result
				if err := gb.dev.Do(func(c *cuda.Ctx) error {
					var err error
					got, err = s.groupResults(ctx, c)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				want, err := ref.QuantizeGrouped(ctx, req, x, ints(sp), stR)
				if err != nil {
					t.Fatal(err)
				}
				if tc.endStep {
					for _, st := range stR {
						if err := st.Update(r, tc.role); err != nil {
							t.Fatal(err)
						}
					}
				}
				bad := 0
				for g := range want {
					if tc.endStep {
						// The step's scale is already the next one: the
						// result's Scale must be the updated state's; the
						// rest (codes, scale_inv, amax) this step's.
						for _, o := range []*quant.Operand{got[g].Rowwise, got[g].Columnwise} {
							if o == nil || got[g].Rows == 0 {
								continue
							}
							if math.Float32bits(o.Scale) != math.Float32bits(stR[g].Scale) {
								t.Errorf("split vector %d, group %d: scale after the update %g, want %g", k, g, o.Scale, stR[g].Scale)
							}
						}
						for _, pair := range [][2]*quant.Operand{{got[g].Rowwise, want[g].Rowwise}, {got[g].Columnwise, want[g].Columnwise}} {
							if pair[0] != nil && pair[1] != nil {
								pair[0].Scale = pair[1].Scale
							}
						}
					}
					d := diff(got[g], want[g])
					dev := quant.NewState(r)
					if err := s.State(ctx, g, dev); err != nil {
						t.Fatal(err)
					}
					if !sameState(dev, stR[g]) {
						d += fmt.Sprintf(" state: scale %g history %v, want %g %v;", dev.Scale, head(dev.AmaxHistory), stR[g].Scale, head(stR[g].AmaxHistory))
					}
					if d != "" {
						if bad < 3 {
							t.Errorf("split vector %d, group %d (%d rows): %s", k, g, sp[g], d)
						}
						bad++
					}
				}
				steps.add(bad == 0)
				t.Logf("split vector %d: eager step (%d launches), %d of %d groups' results and states bit-exact with the reference", k, s.Kernels(), groups-bad, groups)
			}
			// ONE graph, the states set back, only the split buffer
			// changing between the replays.
			setAll(st0)
			for k, sp := range splits {
				snap := runWithSplits(ctx, t, s, k, sp, true)
				if !bytes.Equal(snap, eager[k]) {
					t.Errorf("graph replay %d: %s", k, bytesDiff("outputs and states", snap, eager[k]))
				} else {
					t.Logf("graph replay %d: %d output and state bytes equal to the eager run (one captured graph)", k, len(snap))
				}
			}
			// A misaligned step rewrites the offsets and zeroes the amaxes
			// (kq_grp_offsets), nothing else: codes, decode factors and
			// states stay.
			kept := func() []byte {
				var out []byte
				if err := gb.dev.Do(func(c *cuda.Ctx) error {
					g := s.grp
					for _, b := range []cuda.Buffer{g.scale, g.scaleInv, g.hist, g.out, g.colOut} {
						if b.Ptr() == 0 {
							continue
						}
						raw, err := download(c, b, b.Size())
						if err != nil {
							return err
						}
						out = append(out, raw...)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				return out
			}
			before := kept()
			runMisaligned(ctx, t, s, splits[0], 8)
			if after := kept(); !bytes.Equal(after, before) {
				t.Errorf("the misaligned step changed codes or states: %s", bytesDiff("kept", after, before))
			} else {
				t.Logf("misaligned step: %d bytes of codes, decode factors and states unchanged", len(after))
			}
			if _, err := s.GroupResults(ctx); err == nil {
				t.Errorf("GroupResults after a misaligned step: no error")
			}
			// QuantizeGrouped, states in and out, against the reference.
			sg, sr := cloneAll(st0), cloneAll(st0)
			got, err := gb.QuantizeGrouped(ctx, req, x, ints(splits[1]), sg)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.QuantizeGrouped(ctx, req, x, ints(splits[1]), sr)
			if err != nil {
				t.Fatal(err)
			}
			ok := true
			for g := range want {
				if d := diff(got[g], want[g]); d != "" || !sameState(sg[g], sr[g]) {
					t.Errorf("QuantizeGrouped group %d: %s (states equal: %v)", g, d, sameState(sg[g], sr[g]))
					ok = false
				}
			}
			exact.add(ok)
		})
	}
	t.Logf("grouped delayed: %d of %d eager steps (64 groups) bit-exact in results and states; QuantizeGrouped %d of %d cases", steps.exact, steps.total, exact.exact, exact.total)
}
