// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package swizzle rearranges block-scale matrices into the layout that
// Blackwell block-scaled GEMMs read, and back. For a scale matrix with R rows
// (a multiple of 128) and C columns (a multiple of 4), entry (i, j) goes to
// byte offset
//
//	((i/128)*(C/4) + j/4)*512 + (i%32)*16 + ((i%128)/32)*4 + j%4
//
// so that each 128x4 tile is one 512-byte block and tiles are row-major.
// Columnwise MXFP8 scales are transposed first (Transpose) and then
// swizzled; NVFP4's columnwise scales are already stored transposed.
package swizzle
