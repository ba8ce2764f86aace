// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ResourceGPU is the extended resource NVIDIA's device plugin advertises.
const ResourceGPU corev1.ResourceName = "nvidia.com/gpu"

// kwokNodeAnnotation marks the nodes KWOK manages (kwok.yaml's
// manageNodesWithAnnotationSelector).
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// StartKWOK runs KWOK against the API server of kubeconfig with the stages of
// test/scale/kwok.yaml (under repoRoot), logging to log; it stops with ctx.
func StartKWOK(ctx context.Context, bin, kubeconfig, repoRoot string, log io.Writer) (*exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+kubeconfig,
		"--config="+filepath.Join(repoRoot, "test", "scale", "kwok.yaml"), "--server-address=")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting KWOK %s (hack/kwok-assets.sh builds it): %w", bin, err)
	}
	return cmd, nil
}

// CreateNodes creates, parallel at a time, a Node for each name that KWOK
// manages, with gpus of ResourceGPU allocatable as the device plugin would
// advertise them; KWOK's node-initialize stage then makes it Ready.
func CreateNodes(ctx context.Context, c client.Client, names []string, gpus, parallel int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for _, name := range names {
		g.Go(func() error {
			return c.Create(gctx, node(name, gpus))
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("creating nodes: %w", err)
	}
	return nil
}

func node(name string, gpus int) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("128"),
		corev1.ResourceMemory: resource.MustParse("2Ti"),
		corev1.ResourcePods:   resource.MustParse("110"),
		ResourceGPU:           *resource.NewQuantity(int64(gpus), resource.DecimalSI),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
				"type": "kwok",
			},
		},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
}
