// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package element

import (
	"math"
	"testing"
)

func benchConvert(b *testing.B, conv func(float32) uint8) {
	xs := make([]float32, 4096)
	for i := range xs {
		xs[i] = float32(math.Sin(float64(i))) * 300
	}
	out := make([]uint8, len(xs))
	b.ResetTimer()
	for b.Loop() {
		for i, x := range xs {
			out[i] = conv(x)
		}
	}
	b.ReportMetric(float64(len(xs))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
}

func BenchmarkToE4M3(b *testing.B) { benchConvert(b, ToE4M3) }
func BenchmarkToE5M2(b *testing.B) { benchConvert(b, ToE5M2) }
func BenchmarkToE2M1(b *testing.B) { benchConvert(b, ToE2M1) }

func BenchmarkEncodeScaledE4M3(b *testing.B) {
	xs := make([]float32, 4096)
	for i := range xs {
		xs[i] = float32(math.Sin(float64(i))) * 300
	}
	out := make([]uint8, len(xs))
	for b.Loop() {
		E4M3.EncodeScaled(out, xs, 1.25)
	}
	b.ReportMetric(float64(len(xs))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
}
