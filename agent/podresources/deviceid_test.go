// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package podresources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseDeviceID(t *testing.T) {
	tests := []struct {
		name   string
		id     string
		want   parsedID
		wantOK bool
	}{
		{name: "whole GPU by UUID", id: "GPU-aaaa", want: parsedID{gpuUUID: "GPU-aaaa"}, wantOK: true},
		{name: "time-sliced replica", id: "GPU-aaaa::3", want: parsedID{gpuUUID: "GPU-aaaa", replica: "3"}, wantOK: true},
		{name: "whole GPU by index", id: "2", want: parsedID{gpuIndex: "2"}, wantOK: true},
		{name: "replica by index", id: "2::0", want: parsedID{gpuIndex: "2", replica: "0"}, wantOK: true},
		{name: "legacy MIG names its parent", id: "MIG-GPU-aaaa/1/0",
			want: parsedID{gpuUUID: "GPU-aaaa", mig: "MIG-GPU-aaaa/1/0"}, wantOK: true},
		{name: "current MIG needs the resolver", id: "MIG-bbbb",
			want: parsedID{migUUID: "MIG-bbbb", mig: "MIG-bbbb"}, wantOK: true},
		{name: "shared current MIG", id: "MIG-bbbb::1",
			want: parsedID{migUUID: "MIG-bbbb", mig: "MIG-bbbb", replica: "1"}, wantOK: true},
		{name: "MIG by index", id: "1:3", want: parsedID{gpuIndex: "1", mig: "1:3"}, wantOK: true},
		{name: "GKE GPU", id: "nvidia3", want: parsedID{gpuIndex: "3"}, wantOK: true},
		{name: "GKE MIG", id: "nvidia0/gi2", want: parsedID{gpuIndex: "0", mig: "nvidia0/gi2"}, wantOK: true},
		{name: "GKE shared GPU", id: "nvidia1/vgpu4", want: parsedID{gpuIndex: "1", replica: "4"}, wantOK: true},
		{name: "legacy MIG without instance", id: "MIG-GPU-aaaa", wantOK: false},
		{name: "unknown naming", id: "fpga-7", wantOK: false},
		{name: "empty", id: "", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseDeviceID(tt.id)
			if ok != tt.wantOK {
				t.Fatalf("parseDeviceID(%q) ok = %v, want %v", tt.id, ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(parsedID{})); diff != "" {
				t.Errorf("parseDeviceID(%q) (-want +got):\n%s", tt.id, diff)
			}
		})
	}
}
