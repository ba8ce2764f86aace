// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestNodeLabels(t *testing.T) {
	// The driver and CUDA labels are the same for every simulated node.
	common := map[string]string{
		"nvidia.com/gpu.present":                  "true",
		"nvidia.com/gpu.replicas":                 "1",
		"nvidia.com/gpu.sharing-strategy":         "none",
		"nvidia.com/gpu.mode":                     "compute",
		"nvidia.com/mps.capable":                  "false",
		"nvidia.com/cuda.driver-version.major":    "580",
		"nvidia.com/cuda.driver-version.minor":    "95",
		"nvidia.com/cuda.driver-version.revision": "05",
		"nvidia.com/cuda.driver-version.full":     "580.95.05",
		"nvidia.com/cuda.runtime-version.major":   "13",
		"nvidia.com/cuda.runtime-version.minor":   "0",
		"nvidia.com/cuda.runtime-version.full":    "13.0",
		"nvidia.com/cuda.driver.major":            "580",
		"nvidia.com/cuda.driver.minor":            "95",
		"nvidia.com/cuda.driver.rev":              "05",
		"nvidia.com/cuda.runtime.major":           "13",
		"nvidia.com/cuda.runtime.minor":           "0",
	}
	gpu := func(product, count, memory, family, major, minor, mig string) map[string]string {
		out := map[string]string{
			"nvidia.com/gpu.product":       product,
			"nvidia.com/gpu.count":         count,
			"nvidia.com/gpu.memory":        memory,
			"nvidia.com/gpu.family":        family,
			"nvidia.com/gpu.compute.major": major,
			"nvidia.com/gpu.compute.minor": minor,
			"nvidia.com/mig.capable":       mig,
		}
		for k, v := range common {
			out[k] = v
		}
		return out
	}
	cases := []struct {
		name string
		spec string
		want map[string]string
	}{
		{name: "H100 as GFD labels it", spec: "H100:4", want: gpu("NVIDIA-H100-80GB-HBM3", "4", "81559", "hopper", "9", "0", "true")},
		{name: "H200", spec: "H200:8", want: gpu("NVIDIA-H200", "8", "143771", "hopper", "9", "0", "true")},
		{name: "A100", spec: "A100:2", want: gpu("NVIDIA-A100-SXM4-80GB", "2", "81920", "ampere", "8", "0", "true")},
		{name: "L40S is Ada and has no MIG", spec: "L40S:1", want: gpu("NVIDIA-L40S", "1", "46068", "ada-lovelace", "8", "9", "false")},
		{name: "B300 is Blackwell at 10.3", spec: "B300:1", want: gpu("NVIDIA-B300-SXM6-AC", "1", "275040", "blackwell", "10", "3", "true")},
		{name: "RTX PRO 6000 is Blackwell at 12.0", spec: "RTX-PRO-6000:2",
			want: gpu("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "2", "97887", "blackwell", "12", "0", "true")},
		{name: "mixed models: GPU 0's model and its count", spec: "A100:2,H100:4,A100:1",
			want: gpu("NVIDIA-A100-SXM4-80GB", "3", "81920", "ampere", "8", "0", "true")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, NodeLabels(mustSpec(t, tc.spec))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestGFDProductName(t *testing.T) {
	cases := map[string]string{
		"NVIDIA H100 80GB HBM3":    "NVIDIA-H100-80GB-HBM3",
		"Tesla T4":                 "Tesla-T4",
		" NVIDIA  A10G (rev 1) ":   "NVIDIA-A10G-rev-1",
		"NVIDIA GeForce RTX™ 4090": "NVIDIA-GeForce-RTX-4090",
	}
	for in, want := range cases {
		if got := gfdProductName(in); got != want {
			t.Errorf("gfdProductName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestApplyNodeLabelsWaitsForTheNode(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	labels := NodeLabels(mustSpec(t, "H100:4"))

	done := make(chan error, 1)
	go func() { done <- ApplyNodeLabels(ctx, client, "node-a", labels, 10*time.Millisecond) }()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("returned before the Node existed: %v", err)
	default:
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"kubernetes.io/hostname": "node-a"}}}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kubernetes.io/hostname": "node-a"}
	for k, v := range labels {
		want[k] = v
	}
	if diff := cmp.Diff(want, got.Labels); diff != "" {
		t.Errorf("Node labels (-want +got):\n%s", diff)
	}
}

func TestApplyNodeLabelsGivesUpWithTheContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ApplyNodeLabels(ctx, fake.NewClientset(), "missing", map[string]string{"a": "b"}, 10*time.Millisecond); err == nil {
		t.Error("no error for a Node that never appeared")
	}
}
