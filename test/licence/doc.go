// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package licence checks that every source file kquant owns (Go, shell,
// CUDA and Python) opens with the project's licence header: the copyright
// line and the SPDX identifier of the Apache License 2.0 in LICENSE.
// Generated Go files carry it through controller-gen's header file,
// hack/boilerplate.go.txt.
package licence
