// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package linear

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/accuracy"
	"github.com/kquant/kquant/internal/quant/reference"
	"github.com/kquant/kquant/internal/quant/workload"
)

func TestGEMMSmall(t *testing.T) {
	x := quant.Tensor{Rows: 2, Cols: 3, Data: []float32{1, 2, 3, 4, 5, 6}}
	w := quant.Tensor{Rows: 2, Cols: 3, Data: []float32{1, 0, 0, 1, 1, 1}}
	y, err := GEMM(context.Background(), x, w)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float32{1, 6, 4, 15}, y.Data); diff != "" {
		t.Errorf("GEMM (-want +got):\n%s", diff)
	}
}

func TestQuantizedLinearSNRPerRecipe(t *testing.T) {
	// Minimum output SNRs for a 64x256 by 48x256 normal layer: far below
	// what the recipes reach, far above what a broken recipe gives.
	minSNR := map[quant.Scheme]float64{
		quant.DelayedScaling:       24,
		quant.Float8CurrentScaling: 24,
		quant.Float8BlockScaling:   24,
		quant.MXFP8BlockScaling:    22,
		quant.NVFP4BlockScaling:    12,
	}
	x, _ := workload.Generate(workload.Spec{Seed: 1, Stream: 0}, 64, 256)
	w, _ := workload.Generate(workload.Spec{Seed: 1, Stream: 1}, 48, 256)
	for _, s := range quant.Schemes() {
		t.Run(string(s), func(t *testing.T) {
			res, err := Run(context.Background(), reference.New(), Request{Recipe: quant.DefaultRecipe(s), X: x, W: w})
			if err != nil {
				t.Fatal(err)
			}
			if res.Output.SNRdB < minSNR[s] {
				t.Errorf("output SNR %.1f dB below %.1f", res.Output.SNRdB, minSNR[s])
			}
			if res.Y.Rows != 64 || res.Y.Cols != 48 {
				t.Errorf("output shape [%d, %d]", res.Y.Rows, res.Y.Cols)
			}
			t.Logf("%s: output SNR %.2f dB, input SNR %.2f dB, weight SNR %.2f dB", s, res.Output.SNRdB, res.XMetrics.SNRdB, res.WMetrics.SNRdB)
		})
	}
}

func TestQuantizedLinearRejectsMismatchedK(t *testing.T) {
	_, err := Run(context.Background(), reference.New(), Request{
		Recipe: quant.DefaultRecipe(quant.MXFP8BlockScaling),
		X:      quant.NewTensor(2, 3), W: quant.NewTensor(2, 4),
	})
	if err == nil {
		t.Error("mismatched K accepted")
	}
}

// deviceLinear is a backend that runs QuantizedLinear itself.
type deviceLinear struct {
	*reference.Backend
	got *Request
}

func (d deviceLinear) QuantizedLinear(_ context.Context, req Request) (*Result, error) {
	*d.got = req
	return &Result{Output: accuracy.Metrics{SNRdB: 42}}, nil
}

func TestRunHandsARunnerTheWholeLayer(t *testing.T) {
	x, _ := workload.Generate(workload.Spec{Seed: 1, Stream: 0}, 4, 32)
	w, _ := workload.Generate(workload.Spec{Seed: 1, Stream: 1}, 2, 32)
	var got Request
	res, err := Run(context.Background(), deviceLinear{reference.New(), &got}, Request{Recipe: quant.DefaultRecipe(quant.MXFP8BlockScaling), X: x, W: w, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output.SNRdB != 42 || got.Seed != 7 || got.X.Rows != 4 || got.W.Rows != 2 {
		t.Errorf("Run did not return the runner's result for the request: result %+v, request seed %d, shapes %d/%d", res.Output, got.Seed, got.X.Rows, got.W.Rows)
	}
}
