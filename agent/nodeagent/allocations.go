// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package nodeagent

import (
	"context"
	"fmt"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	resourcev1 "k8s.io/api/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/agent/podresources"
	"github.com/kquant/kquant/agent/profile"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/logging"
)

// allocations reads which containers hold which GPU of this node: the
// kubelet's PodResources List, its device IDs resolved through NVML (indexes,
// MIG parents) and this node's ResourceSlices (DRA devices), both re-read
// before each List so that a new MIG layout or a republished slice is seen.
type allocations struct {
	reader *podresources.Reader
	lib    gonvml.Interface
	slices client.Reader
	node   string
	driver string
	domain string
}

// openAllocations connects to the PodResources socket; nil when none is
// configured.
func openAllocations(ctx context.Context, opts Options, c client.Reader, lib gonvml.Interface) (*allocations, error) {
	if opts.PodResourcesSocket == "" {
		return nil, nil
	}
	a := &allocations{lib: lib, slices: c, node: opts.NodeName,
		driver: opts.DRADriver, domain: opts.DRAAttributeDomain}
	if a.driver == "" {
		a.driver = podresources.DefaultDRADriver
	}
	r, err := podresources.Dial(opts.PodResourcesSocket, podresources.Options{DRADriver: a.driver})
	if err != nil {
		return nil, err
	}
	a.reader = r
	logging.FromContext(ctx).Info("Reading GPU allocations from the kubelet", "socket", opts.PodResourcesSocket)
	return a, nil
}

// source is a as the Reporter's source; nil for a nil a.
func (a *allocations) source() profile.Allocations {
	if a == nil {
		return nil
	}
	return a
}

func (a *allocations) close() { _ = a.reader.Close() }

// Allocations implements profile.Allocations.
func (a *allocations) Allocations(ctx context.Context) (map[string][]v1alpha1.GPUAllocation, error) {
	inv := podresources.Inventory{}
	if a.lib != nil {
		var err error
		if inv, err = podresources.InventoryFromNVML(a.lib); err != nil {
			return nil, fmt.Errorf("reading the GPUs' indexes and MIG devices: %w", err)
		}
	}
	slices := &resourcev1.ResourceSliceList{}
	err := a.slices.List(ctx, slices, client.MatchingFields{"spec.nodeName": a.node, "spec.driver": a.driver})
	if err != nil {
		// Clusters without DRA: device-plugin allocations still resolve.
		logging.FromContext(ctx).V(logging.Debug).Info("ResourceSlices not read, DRA devices stay unresolved", "reason", err.Error())
	} else {
		inv.DRADevices = podresources.DRADevicesFromSlices(a.driver, a.domain, slices.Items)
	}
	snap, err := a.reader.List(ctx, inv)
	if err != nil {
		return nil, err
	}
	for _, u := range snap.Unresolved {
		logging.FromContext(ctx).V(logging.Debug).Info("GPU allocation not resolved", "container", u.Container.String(),
			"resource", u.ResourceName, "device", u.DeviceID, "reason", u.Reason)
	}
	return snap.ByGPU(), nil
}
