// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package reference

import (
	"context"
	"testing"

	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/workload"
)

// Benchmarks quantize one 4096x4096 normal tensor per iteration and report
// Melem/s (input elements per second). Run single-core figures with
// go test -run XXX -bench . -cpu 1 ./internal/quant/reference.

const benchN = 4096

func benchInput(b *testing.B) quant.Tensor {
	b.Helper()
	x, err := workload.Generate(workload.Spec{Seed: 1, DType: workload.BF16}, benchN, benchN)
	if err != nil {
		b.Fatal(err)
	}
	return x
}

func benchQuantize(b *testing.B, r quant.Recipe, role quant.TensorRole, u quant.Usage) {
	x := benchInput(b)
	be := New()
	ctx := context.Background()
	req := quant.Request{Recipe: r, Role: role, Usage: u, Seed: 1}
	if r.Scheme == quant.DelayedScaling {
		req.State = quant.NewState(r)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(x.Data)) * 4)
	b.ResetTimer()
	for b.Loop() {
		if _, err := be.Quantize(ctx, req, x); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(x.Data))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
}

func recipeWith(s quant.Scheme, mod func(*quant.Recipe)) quant.Recipe {
	r := quant.DefaultRecipe(s)
	if mod != nil {
		mod(&r)
	}
	return r
}

func BenchmarkDelayedRowwise(b *testing.B) {
	benchQuantize(b, quant.DefaultRecipe(quant.DelayedScaling), quant.Input, quant.UsageRowwise)
}

func BenchmarkCurrentRowwise(b *testing.B) {
	benchQuantize(b, quant.DefaultRecipe(quant.Float8CurrentScaling), quant.Input, quant.UsageRowwise)
}

func BenchmarkCurrentBoth(b *testing.B) {
	benchQuantize(b, quant.DefaultRecipe(quant.Float8CurrentScaling), quant.Input, quant.UsageBoth)
}

func BenchmarkBlock1x128Rowwise(b *testing.B) {
	benchQuantize(b, quant.DefaultRecipe(quant.Float8BlockScaling), quant.Input, quant.UsageRowwise)
}

func BenchmarkBlock1x128Both(b *testing.B) {
	benchQuantize(b, quant.DefaultRecipe(quant.Float8BlockScaling), quant.Input, quant.UsageBoth)
}

func BenchmarkBlock128x128Weight(b *testing.B) {
	benchQuantize(b, quant.DefaultRecipe(quant.Float8BlockScaling), quant.Weight, quant.UsageRowwise)
}

func BenchmarkMXFP8Rowwise(b *testing.B) {
	benchQuantize(b, quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input, quant.UsageRowwise)
}

func BenchmarkMXFP8RowwiseOCP(b *testing.B) {
	benchQuantize(b, recipeWith(quant.MXFP8BlockScaling, func(r *quant.Recipe) { r.MXFP8.ScaleRounding = quant.ScaleRoundingOCP }), quant.Input, quant.UsageRowwise)
}

func BenchmarkMXFP8Columnwise(b *testing.B) {
	benchQuantize(b, quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input, quant.UsageColumnwise)
}

func BenchmarkMXFP8Both(b *testing.B) {
	benchQuantize(b, quant.DefaultRecipe(quant.MXFP8BlockScaling), quant.Input, quant.UsageBoth)
}

func BenchmarkMXFP82DWeight(b *testing.B) {
	benchQuantize(b, recipeWith(quant.MXFP8BlockScaling, func(r *quant.Recipe) { r.MXFP8.TwoDimensionalWeights = true }), quant.Weight, quant.UsageRowwise)
}

func BenchmarkNVFP4Rowwise(b *testing.B) {
	benchQuantize(b, quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Input, quant.UsageRowwise)
}

func BenchmarkNVFP4InputBothRHT(b *testing.B) {
	benchQuantize(b, quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Input, quant.UsageBoth)
}

func BenchmarkNVFP4GradientSR(b *testing.B) {
	benchQuantize(b, quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Gradient, quant.UsageRowwise)
}

func BenchmarkNVFP4Weight2D(b *testing.B) {
	benchQuantize(b, quant.DefaultRecipe(quant.NVFP4BlockScaling), quant.Weight, quant.UsageRowwise)
}

func BenchmarkDequantizeMXFP8(b *testing.B) {
	x := benchInput(b)
	be := New()
	res, err := be.Quantize(context.Background(), quant.Request{Recipe: quant.DefaultRecipe(quant.MXFP8BlockScaling), Role: quant.Input, Usage: quant.UsageRowwise}, x)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := be.Dequantize(context.Background(), res, quant.UsageRowwise); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(x.Data))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
}
