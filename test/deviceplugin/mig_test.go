// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kquant/kquant/agent/simulate"
)

// TestMixedStrategy: whole GPUs and the MIG devices of MIG-enabled GPUs are
// advertised apart, the latter per profile, as NVIDIA's mixed strategy does.
func TestMixedStrategy(t *testing.T) {
	spec, err := simulate.Parse("H100:2,A100/mig:1")
	if err != nil {
		t.Fatal(err)
	}
	var whole []string
	for _, d := range Devices("n", spec) {
		whole = append(whole, d.UUID)
	}
	if diff := cmp.Diff([]string{simulate.UUID("n", 0), simulate.UUID("n", 1)}, whole); diff != "" {
		t.Errorf("whole GPUs (-want +got):\n%s", diff)
	}
	byProfile := map[string][]string{}
	for profile, ds := range MIGDevices("n", spec) {
		for _, d := range ds {
			if d.Index != 2 || d.MIGProfile != profile {
				t.Errorf("MIG device %+v under profile %s", d, profile)
			}
			byProfile[profile] = append(byProfile[profile], d.UUID)
		}
	}
	want := map[string][]string{
		"3g.40gb": {simulate.MIGUUID("n", 2, 0)},
		"2g.20gb": {simulate.MIGUUID("n", 2, 1), simulate.MIGUUID("n", 2, 2)},
	}
	if diff := cmp.Diff(want, byProfile); diff != "" {
		t.Errorf("MIG devices by profile (-want +got):\n%s", diff)
	}
	p, err := New(Options{NodeName: "n", Spec: spec, MIGProfile: "2g.20gb", DevicePluginDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if p.ResourceName() != "nvidia.com/mig-2g.20gb" || len(p.Devices()) != 2 {
		t.Errorf("MIG plugin advertises %s with %d devices, want nvidia.com/mig-2g.20gb with 2", p.ResourceName(), len(p.Devices()))
	}
	if _, err := New(Options{NodeName: "n", Spec: spec, MIGProfile: "1g.10gb", DevicePluginDir: t.TempDir()}); err == nil {
		t.Error("a plugin for a profile no GPU has was made")
	}
	// Indexes in the unhealthy file stay the node's, MIG GPUs or not.
	got, err := ParseDeviceList([]byte("1\n"), Devices("n", spec))
	if err != nil || !got[simulate.UUID("n", 1)] {
		t.Errorf("ParseDeviceList(1) = %v, %v", got, err)
	}
}
