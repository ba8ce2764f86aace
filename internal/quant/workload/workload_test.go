// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package workload

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/internal/quant/element"
)

func TestLnMatchesMathLog(t *testing.T) {
	for _, x := range []float64{1e-300, 1e-10, 0.001, 0.1, 0.5, 0.70710678, 0.7071068, 0.9, 0.999999, 1, 1.5, 2, 1e10} {
		got, want := ln(x), math.Log(x)
		if math.Abs(got-want) > 4e-16*math.Max(1, math.Abs(want)) {
			t.Errorf("ln(%g) = %.17g, math.Log = %.17g", x, got, want)
		}
	}
}

func TestGenerateIsDeterministicAndSeedSensitive(t *testing.T) {
	for _, d := range []Distribution{Normal, Uniform, HeavyTailed} {
		t.Run(string(d), func(t *testing.T) {
			a, err := Generate(Spec{Distribution: d, Seed: 7, DType: FP32}, 33, 17)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := Generate(Spec{Distribution: d, Seed: 7, DType: FP32}, 33, 17)
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("same seed differs (-a +b):\n%s", diff)
			}
			c, _ := Generate(Spec{Distribution: d, Seed: 8, DType: FP32}, 33, 17)
			s, _ := Generate(Spec{Distribution: d, Seed: 7, DType: FP32, Stream: 1}, 33, 17)
			if cmp.Equal(a, c) || cmp.Equal(a, s) {
				t.Error("another seed or stream gives the same tensor")
			}
			// The shape does not change the stream: a prefix of a larger
			// tensor is the smaller tensor.
			big, _ := Generate(Spec{Distribution: d, Seed: 7, DType: FP32}, 1, 33*17+5)
			if diff := cmp.Diff(a.Data, big.Data[:33*17]); diff != "" {
				t.Errorf("prefix differs (-small +big):\n%s", diff)
			}
		})
	}
}

func TestGenerateMoments(t *testing.T) {
	cases := []struct {
		d                 Distribution
		wantMean, wantVar float64
		tolVar            float64
	}{
		{Normal, 0, 1, 0.03},
		{Uniform, 0, 1.0 / 3, 0.01},
		{HeavyTailed, 0, 3, 1.0},
	}
	for _, tc := range cases {
		x, err := Generate(Spec{Distribution: tc.d, Seed: 1, DType: FP32}, 200, 200)
		if err != nil {
			t.Fatal(err)
		}
		var s, s2, mx float64
		for _, v := range x.Data {
			s += float64(v)
			s2 += float64(v) * float64(v)
			mx = math.Max(mx, math.Abs(float64(v)))
		}
		n := float64(len(x.Data))
		mean, variance := s/n, s2/n-(s/n)*(s/n)
		if math.Abs(mean-tc.wantMean) > 0.03 || math.Abs(variance-tc.wantVar) > tc.tolVar {
			t.Errorf("%s: mean %g var %g, want about %g and %g", tc.d, mean, variance, tc.wantMean, tc.wantVar)
		}
		if tc.d == Uniform && mx > 1 {
			t.Errorf("uniform value %g outside [-1, 1)", mx)
		}
		if tc.d == HeavyTailed && mx < 10 {
			t.Errorf("heavy-tailed max |x| = %g, expected outliers beyond 10", mx)
		}
	}
}

func TestGenerateRoundsToDType(t *testing.T) {
	for _, dt := range []DType{BF16, FP16, ""} {
		x, err := Generate(Spec{Seed: 3, DType: dt}, 10, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range x.Data {
			var back float32
			if dt == FP16 {
				back = element.FP16ToFloat32(element.Float32ToFP16(v))
			} else {
				back = element.BF16ToFloat32(element.Float32ToBF16(v))
			}
			if back != v {
				t.Fatalf("dtype %q: %g is not representable", dt, v)
			}
		}
	}
}

func TestGenerateRejectsUnknownSpecs(t *testing.T) {
	if _, err := Generate(Spec{Distribution: "Cauchy"}, 1, 1); err == nil {
		t.Error("unknown distribution accepted")
	}
	if _, err := Generate(Spec{DType: "FP8"}, 1, 1); err == nil {
		t.Error("unknown dtype accepted")
	}
	if _, err := Generate(Spec{}, -1, 1); err == nil {
		t.Error("negative shape accepted")
	}
}

func TestSplits(t *testing.T) {
	cases := []struct {
		name               string
		rows, count, align int
		want               []int
	}{
		{"even", 256, 4, 32, []int{64, 64, 64, 64}},
		{"uneven chunks go first", 160, 3, 32, []int{64, 64, 32}},
		{"misaligned rest to last", 100, 2, 32, []int{64, 36}},
		{"more groups than chunks", 64, 4, 32, []int{32, 32, 0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := UniformSplits(tc.rows, tc.count, tc.align)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("UniformSplits (-want +got):\n%s", diff)
			}
		})
	}
	r1, _ := RandomSplits(4096, 8, 128, 5)
	r2, _ := RandomSplits(4096, 8, 128, 5)
	if diff := cmp.Diff(r1, r2); diff != "" {
		t.Errorf("RandomSplits not deterministic:\n%s", diff)
	}
	sum := 0
	for _, n := range r1 {
		if n%128 != 0 {
			t.Errorf("random split %d not aligned", n)
		}
		sum += n
	}
	if sum != 4096 {
		t.Errorf("random splits add to %d", sum)
	}
	if _, err := UniformSplits(10, 0, 1); err == nil {
		t.Error("zero groups accepted")
	}
}
