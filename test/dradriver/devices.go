// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package dradriver

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcev1ac "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/test/deviceplugin"
)

const (
	// DefaultDriverName is the driver's name: the ResourceSlices' driver,
	// the kubelet plugin's registration name and device.driver in CEL.
	DefaultDriverName = "gpu.kquant.dev"
	// DefaultAttributeDomain is the domain of the devices' attributes:
	// NVIDIA's, so that a claim pins a GPU as with NVIDIA's DRA driver.
	DefaultAttributeDomain = "gpu.nvidia.com"
	// DefaultDeviceClassName is the DeviceClass the local cluster creates:
	// NVIDIA's name for whole GPUs, the run pods' default.
	DefaultDeviceClassName = "gpu.nvidia.com"
	// FieldManager is the driver's field manager and user agent.
	FieldManager = "kquant-test-dradriver"
)

// Attribute names, without their domain.
const (
	AttributeUUID        = "uuid"
	AttributeIndex       = "index"
	AttributeProductName = "productName"
	CapacityMemory       = "memory"
)

// GPU is one simulated GPU as the driver publishes it.
type GPU struct {
	deviceplugin.Device
	// Name is the device's name in the ResourceSlice: gpu-<index>.
	Name string
}

// GPUs lists a simulated node's GPUs in index order, with the UUIDs the
// agent's simulate mode and the test device plugin give them.
func GPUs(nodeName string, spec simulate.Spec) []GPU {
	devices := deviceplugin.Devices(nodeName, spec)
	out := make([]GPU, 0, len(devices))
	for _, d := range devices {
		out = append(out, GPU{Device: d, Name: fmt.Sprintf("gpu-%d", d.Index)})
	}
	return out
}

// SliceDevices is what the driver publishes for gpus: one device each, with
// the uuid, index and productName attributes and the memory capacity, all in
// domain.
func SliceDevices(gpus []GPU, domain string) []resourceapi.Device {
	out := make([]resourceapi.Device, 0, len(gpus))
	for _, g := range gpus {
		uuid, name, index := g.UUID, g.Product.Name, int64(g.Index)
		out = append(out, resourceapi.Device{
			Name: g.Name,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				qualified(domain, AttributeUUID):        {StringValue: &uuid},
				qualified(domain, AttributeIndex):       {IntValue: &index},
				qualified(domain, AttributeProductName): {StringValue: &name},
			},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				qualified(domain, CapacityMemory): {Value: *resource.NewQuantity(g.Product.MemoryMiB<<20, resource.BinarySI)},
			},
		})
	}
	return out
}

func qualified(domain, name string) resourceapi.QualifiedName {
	return resourceapi.QualifiedName(domain + "/" + name)
}

// DeviceClass is a class named name that selects every device of driverName,
// as an apply configuration.
func DeviceClass(name, driverName string) *resourcev1ac.DeviceClassApplyConfiguration {
	return resourcev1ac.DeviceClass(name).WithSpec(resourcev1ac.DeviceClassSpec().WithSelectors(
		resourcev1ac.DeviceSelector().WithCEL(resourcev1ac.CELDeviceSelector().
			WithExpression(fmt.Sprintf("device.driver == %q", driverName)))))
}

// ApplyDeviceClass creates or updates DeviceClass(name, driverName) with
// server-side apply.
func ApplyDeviceClass(ctx context.Context, client kubernetes.Interface, name, driverName string) error {
	_, err := client.ResourceV1().DeviceClasses().Apply(ctx, DeviceClass(name, driverName),
		metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("applying DeviceClass %s: %w", name, err)
	}
	return nil
}
