// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package dradriver

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/grpc"
	drahealth "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
)

// NodeWatchResources is the kubelet's device-health stream
// (DRAResourceHealth, which the kubelet asks every driver for): every
// simulated GPU is healthy, reported once, and the stream stays open until
// the kubelet or the driver ends it.
func (d *Driver) NodeWatchResources(_ *drahealth.NodeWatchResourcesRequest, stream grpc.ServerStreamingServer[drahealth.NodeWatchResourcesResponse]) error {
	now := time.Now().Unix()
	resp := &drahealth.NodeWatchResourcesResponse{}
	for _, name := range slices.Sorted(maps.Keys(d.gpus)) {
		resp.Devices = append(resp.Devices, &drahealth.DeviceHealth{
			Device:          &drahealth.DeviceIdentifier{PoolName: d.opts.NodeName, DeviceName: name},
			Health:          drahealth.HealthStatus_HEALTHY,
			LastUpdatedTime: now,
		})
	}
	if err := stream.Send(resp); err != nil {
		return fmt.Errorf("sending device health: %w", err)
	}
	<-stream.Context().Done()
	return nil
}
