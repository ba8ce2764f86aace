// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package version holds the build's version, stamped by the Makefile with
// -ldflags "-X github.com/kquant/kquant/cmd/internal/version.Version=...".
package version

// Version is the kquant release or git description of this build.
// It is a variable only so that the linker can stamp it.
var Version = "v0.0.0-dev"

// String is what every binary's --version prints.
func String(binary string) string { return binary + " " + Version }
