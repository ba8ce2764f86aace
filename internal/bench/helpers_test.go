// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"time"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/measure"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
)

func ptr[T any](v T) *T { return &v }

// testSpec is a small Validation run of scheme on the given shapes.
func testSpec(scheme v1alpha1.Scheme, op v1alpha1.Operation, shapes ...v1alpha1.Shape) Spec {
	s := Spec{
		RecipeName: "test",
		Recipe:     v1alpha1.QuantRecipeSpec{Scheme: scheme},
		Mode:       v1alpha1.JobModeValidation,
		Workload: v1alpha1.Workload{
			Operation: op, Shapes: shapes, Seed: 1,
			InputDType: v1alpha1.DTypeBF16, Distribution: v1alpha1.DistributionNormal,
		},
		Execution: v1alpha1.ExecutionForLevel(v1alpha1.LevelQuick, v1alpha1.Execution{Iterations: ptr[int32](2), Warmup: ptr[int32](1)}),
	}
	if op == v1alpha1.OperationGroupedQuantize {
		s.Workload.Groups = &v1alpha1.Groups{Count: 4, Splits: v1alpha1.SplitUniform}
	}
	return s
}

func shape(rows, cols int64) v1alpha1.Shape { return v1alpha1.Shape{Rows: rows, Cols: cols} }

// fakeBackend is the reference backend under another name, so that the
// engine compares its bytes with the reference; it can corrupt one byte
// of every rowwise operand and measure itself.
type fakeBackend struct {
	reference.Backend
	corrupt bool
	measure *measure.Measurement
	// measured records the steps Measure was given.
	measured []measure.Step
}

func (f *fakeBackend) Name() string { return "fake" }

func (f *fakeBackend) Quantize(ctx context.Context, req quant.Request, x quant.Tensor) (*quant.Result, error) {
	res, err := f.Backend.Quantize(ctx, req, x)
	if err == nil && f.corrupt && res.Rowwise != nil && len(res.Rowwise.Data) > 0 {
		res.Rowwise.Data[0] ^= 1
	}
	return res, err
}

// measuringBackend adds Measure to fakeBackend.
type measuringBackend struct{ *fakeBackend }

func (m measuringBackend) Measure(_ context.Context, s measure.Step, _ measure.Options) (measure.Measurement, error) {
	m.measured = append(m.measured, s)
	return *m.measure, nil
}

// stepClock advances by d on every reading.
type stepClock struct {
	t time.Time
	d time.Duration
}

func (c *stepClock) Now() time.Time { c.t = c.t.Add(c.d); return c.t }
