// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package hadamard implements the 16-point random Hadamard transform (RHT)
// that NVFP4 applies to the columnwise operand of inputs and gradients, in
// the float32 evaluation order that the contract fixes
// (docs/quantization-formats.md, contract v2), so that a CUDA kernel
// reproduces it bit for bit.
//
// The transform of a run x of 16 elements is y = (H16 · diag(s) / 4) · x,
// where H16 is the Sylvester Hadamard matrix, H[i][j] = (-1)^popcount(i&j),
// and s is a ±1 sign vector given as a 16-bit mask (bit j set means s_j =
// -1; TransformerEngine's hard-coded vector is TESignMask). Evaluation
// order, the contract between backends:
//
//	v[j] = ±(float32(x[j]) * 0.25)          // sign s_j; float32 multiply, RNE
//	for h := 1; h < 16; h *= 2 {            // butterfly, Sylvester order
//	    for each i with i&h == 0 {
//	        v[i], v[i+h] = v[i]+v[i+h], v[i]-v[i+h]   // float32, RNE
//	    }
//	}
//	y[i] = BF16(v[i])                        // round to nearest even
//
// The multiply is exact for BF16 and FP16 inputs (a power of two), so only
// the 4 additions per element and the final BF16 rounding round. The BF16
// rounding is what TE's default (non fast-math) RHT kernels do after their
// tensor-core product; the columnwise amax and the block quantization both
// read the rounded values. Any other summation order (the sixteen
// sequential additions of an earlier version, or a tensor-core product)
// rounds differently and must not be used where bytes are compared.
package hadamard
