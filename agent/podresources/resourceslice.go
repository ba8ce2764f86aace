// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package podresources

import (
	resourcev1 "k8s.io/api/resource/v1"
)

// Attributes NVIDIA's DRA driver publishes on each device of its
// ResourceSlices, in the driver's own domain.
const (
	attributeUUID       = "uuid"
	attributeParentUUID = "parentUUID"
	attributeType       = "type"
	deviceTypeMIG       = "mig"
)

// DRADevicesFromSlices builds the DRA table of an Inventory from the
// ResourceSlices of one driver: a device's UUID from its "uuid" attribute,
// and for a MIG device ("type" mig) its GPU from "parentUUID". Attributes may
// be written bare ("uuid") or qualified with domain ("gpu.nvidia.com/uuid"):
// NVIDIA's driver publishes them in its own name's domain, a test driver may
// use another driver name with the same domain; empty domain is the
// driver's name.
func DRADevicesFromSlices(driver, domain string, slices []resourcev1.ResourceSlice) map[DRAKey]DRADevice {
	if domain == "" {
		domain = driver
	}
	out := map[DRAKey]DRADevice{}
	for _, s := range slices {
		if s.Spec.Driver != driver {
			continue
		}
		for _, dev := range s.Spec.Devices {
			uuid := stringAttribute(dev.Attributes, domain, attributeUUID)
			if uuid == "" {
				continue
			}
			d := DRADevice{UUID: uuid}
			if stringAttribute(dev.Attributes, domain, attributeType) == deviceTypeMIG {
				d.ParentUUID = stringAttribute(dev.Attributes, domain, attributeParentUUID)
			}
			out[DRAKey{Driver: driver, Pool: s.Spec.Pool.Name, Device: dev.Name}] = d
		}
	}
	return out
}

func stringAttribute(attrs map[resourcev1.QualifiedName]resourcev1.DeviceAttribute, domain, name string) string {
	for _, key := range []resourcev1.QualifiedName{resourcev1.QualifiedName(name), resourcev1.QualifiedName(domain + "/" + name)} {
		if a, ok := attrs[key]; ok && a.StringValue != nil {
			return *a.StringValue
		}
	}
	return ""
}
