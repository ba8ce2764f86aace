// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build gpu

package nvml_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kquant/kquant/agent/nvml"
	"github.com/kquant/kquant/agent/profile"
	"github.com/kquant/kquant/api/v1alpha1"
)

// TestRealNVMLDiscovery discovers the machine's GPUs with the real NVML
// library and prints the GPUNodeProfile status the agent would publish.
// Build on the GPU machine:
//
//	CGO_ENABLED=1 go test -c -tags gpu -o .gpubin/nvml.test ./agent/nvml/
//	.gpubin/nvml.test -test.v -test.run TestRealNVMLDiscovery
func TestRealNVMLDiscovery(t *testing.T) {
	ctx := context.Background()
	d, err := nvml.Open(ctx, gonvml.New())
	if err != nil {
		t.Fatalf("opening NVML: %v", err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			t.Errorf("closing NVML: %v", err)
		}
	}()
	node, err := d.Discover(ctx)
	if err != nil {
		t.Fatalf("discovering: %v", err)
	}
	if len(node.GPUs) == 0 {
		t.Fatalf("no GPU found (problems: %v)", node.Problems)
	}
	if node.DriverVersion == "" || node.CUDADriverVersion.IsZero() {
		t.Errorf("driver %q CUDA %s", node.DriverVersion, node.CUDADriverVersion)
	}
	st := profile.Build(profile.Input{
		Node: node, Backend: v1alpha1.BackendReference, AgentVersion: "gpu-test", Now: time.Now(),
	})
	for _, g := range st.GPUs {
		if !strings.HasPrefix(g.UUID, "GPU-") || g.ComputeCapability == "" || g.MemoryMiB == 0 || g.Product == "" {
			t.Errorf("GPU %d incomplete: %+v", g.Index, g)
		}
		// On the H100/H200 machine: Hopper, FP8 and block scaling native
		// (with a CUDA >= 12.9 driver), MXFP8 and NVFP4 emulated.
		if g.Architecture == v1alpha1.ArchitectureHopper {
			want := map[v1alpha1.Scheme]v1alpha1.Support{
				v1alpha1.SchemeDelayedScaling:       v1alpha1.SupportNative,
				v1alpha1.SchemeFloat8CurrentScaling: v1alpha1.SupportNative,
				v1alpha1.SchemeMXFP8BlockScaling:    v1alpha1.SupportEmulated,
				v1alpha1.SchemeNVFP4BlockScaling:    v1alpha1.SupportEmulated,
			}
			for _, rs := range g.Recipes {
				if w, ok := want[rs.Scheme]; ok && rs.Support != w {
					t.Errorf("GPU %d %s: %s, want %s", g.Index, rs.Scheme, rs.Support, w)
				}
			}
		}
	}
	out, err := json.MarshalIndent(v1alpha1.GPUNodeProfile{
		TypeMeta: profileTypeMeta(), Status: st,
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	name, _ := os.Hostname()
	t.Logf("GPUNodeProfile the agent would publish on %s:\n%s", name, out)
	if len(node.Problems) > 0 {
		t.Logf("problems: %v", node.Problems)
	}
}

func profileTypeMeta() metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "GPUNodeProfile"}
}
