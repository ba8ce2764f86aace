// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build kquant_nocode

package kernels

import "embed"

// codeFS is empty in a build tagged kquant_nocode: such a binary reads the
// generated code from PTXDirEnv's directory alone. hack/gpu-bundle.sh's
// test binaries are built so, about 9 MB smaller, since they travel to a
// GPU machine beside a checkout that has the code (hack/gpu-run.sh points
// PTXDirEnv at it, or at the code it regenerates).
var codeFS embed.FS

// codeEmbedded is false: codeFS is empty.
const codeEmbedded = false
