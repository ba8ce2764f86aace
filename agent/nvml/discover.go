// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nvml

import (
	"context"
	"errors"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/capability"
)

// GPU is one GPU as discovery found it.
type GPU struct {
	Index             int
	UUID              string
	Product           string
	ComputeCapability capability.Version
	MemoryMiB         int64
	MIGMode           v1alpha1.MIGMode
	// MIGModePending is the mode at the next reset when it differs from
	// MIGMode; empty otherwise.
	MIGModePending v1alpha1.MIGMode
	// MIGDevices are the MIG devices of a MIG-enabled GPU, in slot order.
	MIGDevices []MIGDevice
	Health     v1alpha1.Health
	// HealthMessage says why Health is not Healthy.
	HealthMessage string
}

// Node is what discovery found on the node.
type Node struct {
	DriverVersion     string
	CUDADriverVersion capability.Version
	// GPUs are in index order, one per device, never collapsed by model.
	GPUs []GPU
	// Problems lists devices that could not be identified at all (no handle
	// or UUID); they are left out of GPUs since the API needs a UUID.
	Problems []string
}

// Discoverer finds the node's GPUs and their current health.
type Discoverer interface {
	// Discover reads every GPU. It is cheap enough to call periodically for
	// health refreshes.
	Discover(ctx context.Context) (*Node, error)
	// Close releases the library.
	Close() error
}

// Releaser is a Discoverer that can let go of the driver for a while (a
// driver upgrade) and take it back.
type Releaser interface {
	Discoverer
	// Release closes every handle to the driver; Discover fails with
	// ErrReleased until Reopen. It is idempotent.
	Release() error
	// Reopen opens the driver loaded now; it is idempotent.
	Reopen(ctx context.Context) error
}

// ErrReleased is Discover's answer while the driver is released.
var ErrReleased = errors.New("the GPU driver is released (driver upgrade)")
