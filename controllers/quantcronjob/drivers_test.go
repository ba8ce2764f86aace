// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantcronjob

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

func TestDriverChanges(t *testing.T) {
	profile := func(name, driver, cuda string) kquantv1alpha1.GPUNodeProfile {
		p := kquantv1alpha1.GPUNodeProfile{}
		p.Name, p.Status.DriverVersion, p.Status.CUDADriverVersion = name, driver, cuda
		return p
	}
	seen := []kquantv1alpha1.NodeDriver{{NodeName: "a", DriverVersion: "580", CUDADriverVersion: "13.0"}, {NodeName: "gone", DriverVersion: "570"}}
	changed, record := DriverChanges(seen, []kquantv1alpha1.GPUNodeProfile{
		profile("a", "590", "13.1"), // upgraded
		profile("b", "580", "13.0"), // first seen
		profile("c", "", ""),        // not reported yet
	})
	wantChanged := []kquantv1alpha1.NodeDriver{{NodeName: "a", DriverVersion: "590", CUDADriverVersion: "13.1"}}
	wantRecord := []kquantv1alpha1.NodeDriver{
		{NodeName: "a", DriverVersion: "590", CUDADriverVersion: "13.1"},
		{NodeName: "b", DriverVersion: "580", CUDADriverVersion: "13.0"},
		{NodeName: "gone", DriverVersion: "570"},
	}
	if diff := cmp.Diff(wantChanged, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantRecord, record); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if DriverJobName("x", wantChanged[0]) == DriverJobName("x", wantRecord[1]) {
		t.Error("two drivers share a job name")
	}
}
