// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// The A/B switches Load reads from the environment once per Set: kernel
// variants that give the same bytes, for timing them against each
// other on a GPU. An unknown value is an error from Load.

// NVFP42DEnv picks the 2D (16x16 tile) NVFP4 fast path of 16-bit inputs,
// ungrouped (the same bytes from both kernels). Unset: kq_nvf4_2dp_ when
// both operands are written, kq_nvf4_2d_ for one (nvfp42DPiped). "one":
// kq_nvf4_2d_ always, one block per 64 x 256 piece, loading and then
// computing. "pipe": kq_nvf4_2dp_ always, also one block a piece
// (nvfp42DPipeGrid; its blocks stride only under the tests' grid cap), the
// rowwise codes stored as whole 128-byte rows through shared memory
// (nvfp4_2dp.cuh).
const NVFP42DEnv = "KQUANT_NVFP4_2D"

// NVFP42DEnv's values.
const (
	nvfp42DOne  = "one"
	nvfp42DPipe = "pipe"
)

// nvfp42DPiped reports whether the 2D fast path of 16-bit inputs takes
// kq_nvf4_2dp_ for a launch that writes both operands (both) or one.
// Unset, the choice follows TestBenchmarkUsage (docs/benchmarks.md): for both
// operands the persistent kernel's step was 6% and 2% shorter at 8192^2
// and 16384^2 on an H200 (one call), 7% shorter and 1% longer on an H100;
// for one operand it was 8-15% longer on the H200. Its grid of one block
// a piece is shorter still for both operands
// (nvfp42DPipeGrid).
func (s *Set) nvfp42DPiped(both bool) bool {
	switch s.nvfp42D {
	case nvfp42DOne:
		return false
	case nvfp42DPipe:
		return true
	}
	return both
}

// readVariants sets s's variant fields from the environment and checks
// them.
func (s *Set) readVariants() error {
	return s.setNVFP42D(os.Getenv(NVFP42DEnv))
}

// setNVFP42D selects the 2D NVFP4 fast path of 16-bit inputs, as
// NVFP42DEnv's value v ("" for the default).
func (s *Set) setNVFP42D(v string) error {
	if err := checkVariant(NVFP42DEnv, v, nvfp42DOne, nvfp42DPipe); err != nil {
		return err
	}
	s.nvfp42D = v
	return nil
}

// checkVariant accepts v, the environment variable env's value, when it
// is unset ("") or one of the values it takes; the error names both.
func checkVariant(env, v string, values ...string) error {
	if v == "" || slices.Contains(values, v) {
		return nil
	}
	return fmt.Errorf("%s=%q: want %s or unset", env, v, strings.Join(values, ", "))
}
