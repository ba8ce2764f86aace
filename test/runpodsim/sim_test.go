// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runpodsim

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/test/builders"
)

// TestReadsTheRunPodsOfBuild checks that the simulator finds, in the pod
// runpod.Build makes, the node to bind it to and the run to execute.
func TestReadsTheRunPodsOfBuild(t *testing.T) {
	run := builders.MakeQuantRun("job-3-0", "team-a", "job").Bound("node-7", 3).Obj()
	objs, err := runpod.Build(run, runpod.GPU{UUID: simulate.UUID("node-7", 3)},
		runpod.Config{Allocation: runpod.AllocationDevicePlugin, Image: "agent:scale"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		wantNode string
		wantRun  types.NamespacedName
		wantOK   bool
	}{
		{name: "a run pod", pod: objs.Pod, wantNode: "node-7", wantRun: types.NamespacedName{Namespace: "team-a", Name: "job-3-0"}, wantOK: true},
		{name: "another pod", pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Args: []string{"--run=x/y"}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := affinityNode(tc.pod); got != tc.wantNode {
				t.Errorf("affinityNode = %q, want %q", got, tc.wantNode)
			}
			got, ok := runOf(tc.pod)
			if ok != tc.wantOK || got != tc.wantRun {
				t.Errorf("runOf = %v, %v; want %v, %v", got, ok, tc.wantRun, tc.wantOK)
			}
		})
	}
}

// TestNamesTheDeviceOfTheClaimsGPU checks that the simulated scheduler
// reads the GPU a claim of runpod.Build pins.
func TestNamesTheDeviceOfTheClaimsGPU(t *testing.T) {
	run := builders.MakeQuantRun("job-3-0", "team-a", "job").Bound("node-7", 3).Obj()
	uuid := simulate.UUID("node-7", 3)
	objs, err := runpod.Build(run, runpod.GPU{UUID: uuid},
		runpod.Config{Allocation: runpod.AllocationDRA, Image: "agent:scale", DeviceClassName: runpod.DefaultDeviceClassName, UUIDAttributeDomain: runpod.DefaultUUIDAttributeDomain})
	if err != nil {
		t.Fatal(err)
	}
	if objs.Claim == nil || len(objs.Claim.Spec.Devices.Requests) != 1 {
		t.Fatalf("runpod.Build made claim %+v, want one request", objs.Claim)
	}
	if got, want := deviceName(objs.Claim.Spec.Devices.Requests[0]), strings.ToLower(uuid); got != want {
		t.Errorf("deviceName = %q, want %q", got, want)
	}
}
