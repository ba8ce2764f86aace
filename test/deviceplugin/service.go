// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Environment variables each allocated container gets.
const (
	// EnvVisibleDevices is what NVIDIA's device plugin sets with its env-var
	// strategy, for the NVIDIA container runtime; here it is informational,
	// as there is no runtime hook and no GPU.
	EnvVisibleDevices = "NVIDIA_VISIBLE_DEVICES"
	// EnvSimulatedGPUs tells a simulated run pod which of the node's
	// simulated GPUs the kubelet gave it: their UUIDs, comma-separated.
	EnvSimulatedGPUs = "KQUANT_SIMULATED_GPUS"
)

// service implements the kubelet's DevicePlugin gRPC service over a Plugin.
type service struct {
	v1beta1.UnimplementedDevicePluginServer
	p   *Plugin
	log logr.Logger
}

func (s *service) GetDevicePluginOptions(context.Context, *v1beta1.Empty) (*v1beta1.DevicePluginOptions, error) {
	return s.p.options(), nil
}

// ListAndWatch sends the device list at once and again on every health
// change, and stays open until the kubelet goes away or the server stops.
func (s *service) ListAndWatch(_ *v1beta1.Empty, stream grpc.ServerStreamingServer[v1beta1.ListAndWatchResponse]) error {
	s.log.V(1).Info("kubelet is watching the devices")
	for {
		resp, changed := s.p.snapshot()
		if err := stream.Send(resp); err != nil {
			return fmt.Errorf("sending the device list: %w", err)
		}
		select {
		case <-stream.Context().Done():
			return nil
		case <-changed:
		}
	}
}

// Allocate gives each container the env of NVIDIA's env-var strategy and
// nothing else: no device nodes, no mounts.
func (s *service) Allocate(_ context.Context, req *v1beta1.AllocateRequest) (*v1beta1.AllocateResponse, error) {
	resp := &v1beta1.AllocateResponse{}
	for _, c := range req.ContainerRequests {
		if err := s.p.known(c.DevicesIds); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		ids := strings.Join(c.DevicesIds, ",")
		resp.ContainerResponses = append(resp.ContainerResponses, &v1beta1.ContainerAllocateResponse{
			Envs: map[string]string{EnvVisibleDevices: ids, EnvSimulatedGPUs: ids},
		})
		s.log.Info("Allocated GPUs", "gpus", c.DevicesIds)
	}
	return resp, nil
}

// GetPreferredAllocation prefers the lowest indexes, so that which GPU a
// pod gets is predictable in tests.
func (s *service) GetPreferredAllocation(_ context.Context, req *v1beta1.PreferredAllocationRequest) (*v1beta1.PreferredAllocationResponse, error) {
	resp := &v1beta1.PreferredAllocationResponse{}
	for _, c := range req.ContainerRequests {
		ids, err := s.p.preferred(c.AvailableDeviceIDs, c.MustIncludeDeviceIDs, int(c.AllocationSize))
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &v1beta1.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return resp, nil
}

// PreStartContainer is never called (PreStartRequired is false); it is here
// because the service must have it.
func (s *service) PreStartContainer(context.Context, *v1beta1.PreStartContainerRequest) (*v1beta1.PreStartContainerResponse, error) {
	return &v1beta1.PreStartContainerResponse{}, nil
}

// known checks that every ID is one of the node's GPUs.
func (p *Plugin) known(ids []string) error {
	for _, id := range ids {
		if _, ok := p.index[id]; !ok {
			return fmt.Errorf("device %s: not one of this node's GPUs", id)
		}
	}
	return nil
}

// preferred picks size devices: all of mustInclude, then the lowest indexes
// of available. The result is in index order.
func (p *Plugin) preferred(available, mustInclude []string, size int) ([]string, error) {
	if err := p.known(available); err != nil {
		return nil, err
	}
	if err := p.known(mustInclude); err != nil {
		return nil, err
	}
	byIndex := func(a, b string) int { return p.index[a] - p.index[b] }
	chosen := slices.Clone(mustInclude)
	candidates := slices.SortedFunc(slices.Values(available), byIndex)
	for _, id := range candidates {
		if len(chosen) >= size {
			break
		}
		if !slices.Contains(chosen, id) {
			chosen = append(chosen, id)
		}
	}
	slices.SortFunc(chosen, byIndex)
	return slices.Compact(chosen), nil
}
