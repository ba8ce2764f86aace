// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package measure is the contract between the measurement harness
// (internal/bench) and a backend that times its own steps (internal/gpu):
// the Step to time, the Options of how often, the Measurement that comes
// back, and the optional Measurer and Coverage interfaces a backend may
// implement.
//
// It sits below both so that the arrows point one way. The harness decides
// what to run and a backend how to run it; neither imports the other, and
// the binaries (cmd/agent, cmd/kquantctl) wire a backend into the harness.
// Before it existed the CUDA backend imported the harness to name these
// types, an arrow from a lower layer (a backend of internal/quant's
// Backend interface) to the layer that drives it. Here, as database/sql's
// driver package does for drivers, the vocabulary lives in a leaf that both
// import.
package measure
