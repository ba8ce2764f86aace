// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build !kquant_nocode

package kernels

import "embed"

// codeFS is the generated code, xz-compressed: the PTX of both targets and
// the cubins.
//
//go:embed *.ptx.xz ptx80/*.ptx.xz sass/*/*.cubin.xz
var codeFS embed.FS

// codeEmbedded is true: codeFS holds the generated code.
const codeEmbedded = true
