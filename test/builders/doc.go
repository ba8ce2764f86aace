// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package builders makes kquant objects for tests in a few readable lines, in
// the style of Kueue's test wrappers:
//
//	builders.MakeQuantJob("bench", ns).Recipe("mxfp8").EachGPU().RequireNative().Obj()
//	builders.MakeGPUNodeProfile("node-a").GPUs(builders.H100, 8).Ready().Obj()
//
// Every builder starts from a valid object (one the API server accepts) and
// each method changes one thing, so a test reads like the manifest it stands
// for. Obj returns the object; the builder is not meant to be reused after.
package builders
