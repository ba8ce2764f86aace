// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package capability decides, from a GPU's compute capability and the CUDA
// version its driver supports, how the GPU supports each quantization
// scheme: Native (the recipe's GEMM runs on the hardware), Emulated (the
// quantize kernels run and can be validated, the GEMM does not) or
// Unsupported, with TransformerEngine's own wording of why a scheme is not
// native.
//
// Everything here is a pure function of numbers. Rules key on compute
// capability major/minor, never on a family name: 10.x and 12.x are both
// "Blackwell" but differ (MXFP8 GEMMs exist on 10.x only). The architecture
// name is derived for display and placement filters only.
package capability
