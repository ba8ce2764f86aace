// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package runmode_test

import (
	"context"
	"testing"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/kquant/kquant/agent/runmode"
	"github.com/kquant/kquant/agent/runner"
	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1"
)

// newMIGFixture is a run bound to MIG device 1 (a 2g.20gb slice) of a
// MIG-enabled A100; the caller sets which slice its run pod sees.
func newMIGFixture(t *testing.T) (*fixture, runmode.Options) {
	t.Helper()
	f := newFixture(t, "A100/mig:1", func(run *v1alpha1.QuantRun) {
		run.Spec.GPUUUID, run.Spec.MIGProfile = simulate.MIGUUID(run.Spec.NodeName, 0, 1), "2g.20gb"
	})
	return f, f.options(t, referenceRunner())
}

func TestRunOnAMIGSliceRecordsTheSliceItGot(t *testing.T) {
	cases := []struct {
		name string
		slot int
		// wantIndex: the node's index is known when the kubelet gave the
		// bound slice itself.
		wantIndex *int32
	}{
		{name: "the bound slice", slot: 1, wantIndex: ptr.To[int32](0)},
		{name: "another slice of the profile, picked by the kubelet", slot: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, opts := newMIGFixture(t)
			given := simulate.MIGUUID(f.pod.Node, 0, tc.slot)
			only, _ := f.node.Only(given)
			opts.NVML = func(*v1alpha1.QuantRun) gonvml.Interface { return only.Library() }
			var ranOn string
			opts.Runner = runner.Func(func(_ context.Context, _ *v1alpha1.QuantRun, g v1alpha1.GPU) (*v1alpha1.RunResults, error) {
				ranOn = g.UUID
				return &v1alpha1.RunResults{Verdict: v1alpha1.VerdictPass}, nil
			})
			out, err := runmode.Execute(t.Context(), opts)
			if err != nil || out.Phase != v1alpha1.RunPhaseSucceeded {
				t.Fatalf("Execute = %+v, %v; want Succeeded", out, err)
			}
			want := &v1alpha1.AllocatedGPU{UUID: simulate.UUID(f.pod.Node, 0), Index: tc.wantIndex, MIGDevice: given, Source: v1alpha1.AllocationSourceDevicePlugin}
			if diff := cmp.Diff(want, f.get(t).Status.AllocatedGPU); diff != "" {
				t.Errorf("allocatedGPU (-want +got):\n%s", diff)
			}
			if ranOn != given {
				t.Errorf("the runner ran on %s, want the MIG device %s", ranOn, given)
			}
		})
	}
}

func TestGuardWatchesTheMIGDevice(t *testing.T) {
	f, opts := newMIGFixture(t)
	given := simulate.MIGUUID(f.pod.Node, 0, 1)
	only, _ := f.node.Only(given)
	opts.NVML = func(*v1alpha1.QuantRun) gonvml.Interface { return only.Library() }
	// A process on a sibling slice is no concern of this run's...
	f.node.SetProcesses(simulate.MIGUUID(f.pod.Node, 0, 0), 1111)
	// ...one on its own slice is.
	f.node.SetProcesses(given, 4242)
	out, err := runmode.Execute(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if out.Phase != v1alpha1.RunPhaseFailed || out.Reason != v1alpha1.RunReasonGPUInUse {
		t.Fatalf("outcome = %+v, want Failed GPUInUse", out)
	}
	if got := f.get(t).Status.AllocatedGPU; got == nil || got.MIGDevice != given {
		t.Errorf("allocatedGPU = %+v, want MIG device %s", got, given)
	}
}
