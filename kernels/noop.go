// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package kernels

import (
	"fmt"

	"github.com/kquant/kquant/internal/cuda"
)

// NoOpBytes is the size of a no-op flag: one float32 in device memory.
const NoOpBytes = 4

// WithNoOp runs launches (a quantize step's launches on this Set) with flag
// as the no-op flag of every kernel they launch, TransformerEngine's
// device-side flag (TE PRs 3246 and 3271): a kernel that reads exactly 1.0
// from it returns before it reads or writes anything (kq_noop in
// kq_common.cuh), so that a captured graph skips the step at replay,
// chosen by the flag's value then, without being captured again. The
// zero Buffer means no flag. Under a flag the launchers zero what they
// would memset (NVFP4's amaxes and padded scales) with a kernel that reads
// it, since a memset cannot. Launches outside WithNoOp pass a null flag.
func (s *Set) WithNoOp(flag cuda.Buffer, launches func() error) error {
	if flag.Ptr() != 0 && flag.Size() < NoOpBytes {
		return fmt.Errorf("kernels: a no-op flag needs %d bytes, has %d", NoOpBytes, flag.Size())
	}
	prev := s.noop
	s.noop = flag
	defer func() { s.noop = prev }()
	return launches()
}

// takesNoOp reports whether kernel name of module m takes the no-op flag
// as its last parameter: a name of m.noOp, or one of them with an input
// type's suffix.
func (m moduleKernels) takesNoOp(name string) bool {
	for _, k := range m.noOp {
		if name == k {
			return true
		}
		for _, d := range []DType{F32, BF16, F16} {
			if name == k+d.suffix() {
				return true
			}
		}
	}
	return false
}

// zeroBytes zeroes b on st before a kernel accumulates into it or writes
// only part of it: a memset, or under a no-op flag (WithNoOp) the zero
// kernel, which reads the flag, so that a skipped step leaves b as it was.
func (s *Set) zeroBytes(c *cuda.Ctx, st cuda.Stream, b cuda.Buffer) error {
	if s.noop.Ptr() == 0 {
		return c.MemsetAsync(b, 0, st)
	}
	n := int64(b.Size())
	s.args.Reset().Buffer(b).I64(n)
	return s.launch(c, "kq_nvf4_zero", s.grid(n, 4), cuda.Dim(threads), st)
}
