// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Command startup times a fresh process's start-up on the GPU, the part of
// a run pod's life that holds the GPU before its first result: the CUDA
// driver's initialisation, the device's context, the kernels' load and a
// Quick NVFP4 validation at 256x256 (TransformerEngine's NVFP4 recipe, both
// usages, through the engine a run pod runs). Run it with an empty JIT cache
// (CUDA_CACHE_PATH=$(mktemp -d), or CUDA_CACHE_DISABLE=1) to see what a
// fresh pod pays; docs/benchmarks.md ("Start-up") has the figures.
//
// It lives here rather than as a kquantctl flag so that the binary is
// small enough to travel to a GPU machine beside the checkout.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/bench"
	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/gpu"
)

func main() {
	if err := run(context.Background(), time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "startup:", err)
		os.Exit(1)
	}
}

// run prints each phase's end as seconds since start.
func run(ctx context.Context, start time.Time) error {
	since := func() float64 { return time.Since(start).Seconds() }
	drv, err := cuda.Open()
	if err != nil {
		return err
	}
	fmt.Printf("driver open:        %8.3f s\n", since())
	dev, err := drv.OpenDevice(0)
	if err != nil {
		return err
	}
	defer func() { _ = dev.Close() }()
	ctxReady := since()
	fmt.Printf("context created:    %8.3f s  (%s, compute capability %s)\n", ctxReady, dev.Info().Name, dev.Info().ComputeCapability())
	b, err := gpu.NewOnDevice(dev)
	if err != nil {
		return err
	}
	defer func() { _ = b.Close() }()
	loaded := since()
	fmt.Printf("kernels loaded:     %8.3f s  (%.3f s after the context)\n", loaded, loaded-ctxReady)
	e := &bench.Engine{Backend: b}
	rep, err := e.Run(ctx, quickNVFP4())
	if err != nil {
		return err
	}
	done := since()
	fmt.Printf("validation done:    %8.3f s  (%.3f s after the context; verdict %s)\n", done, done-ctxReady, rep.Results.Verdict)
	mods, err := b.KernelModules()
	if err != nil {
		return err
	}
	for _, m := range mods {
		fmt.Printf("module %-10s from %-10s loaded in %8.3f s\n", m.Name, m.Code, m.Took.Seconds())
	}
	return nil
}

// quickNVFP4 is recipes/nvfp4.yaml (every option on, as TransformerEngine
// has them) validated at Quick level on one 256x256 BF16 input.
func quickNVFP4() bench.Spec {
	on := true
	recipe := v1alpha1.QuantRecipeSpec{
		Scheme: v1alpha1.SchemeNVFP4BlockScaling,
		Format: v1alpha1.FormatE2M1,
		NVFP4: &v1alpha1.NVFP4Options{
			RandomHadamardTransform: &on, StochasticRounding: &on, TwoDimensionalWeights: &on,
		},
	}
	return bench.Spec{
		RecipeName: "nvfp4",
		RecipeKey:  recipe.Key(),
		Recipe:     recipe,
		Mode:       v1alpha1.JobModeValidation,
		Workload: v1alpha1.Workload{
			Operation:    v1alpha1.OperationQuantize,
			Shapes:       []v1alpha1.Shape{{Rows: 256, Cols: 256}},
			InputDType:   v1alpha1.DTypeBF16,
			TensorRole:   v1alpha1.TensorRoleInput,
			Usage:        v1alpha1.UsageBoth,
			Distribution: v1alpha1.DistributionNormal,
			Seed:         1,
		},
		Execution: v1alpha1.ExecutionForLevel(v1alpha1.LevelQuick, v1alpha1.Execution{}),
	}
}
