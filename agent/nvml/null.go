// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nvml

import "context"

// Null is the Discoverer of a machine without NVML: no GPUs.
type Null struct {
	// Reason says why NVML is not used, for logs and the profile.
	Reason string
}

var _ Releaser = Null{}

// Discover returns an empty node.
func (Null) Discover(context.Context) (*Node, error) { return &Node{}, nil }

// Close does nothing.
func (Null) Close() error { return nil }

// Release does nothing: Null holds no handle.
func (Null) Release() error { return nil }

// Reopen does nothing: a node that had no NVML at start keeps none.
func (Null) Reopen(context.Context) error { return nil }
