// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package deviceplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1/capability"
)

// FieldManager is the field manager of the plugin's writes to the Node.
const FieldManager = "kquant-test-deviceplugin"

// NodeLabels is what NVIDIA's GPU feature discovery (GFD) would label a
// node with these GPUs, with the device plugin's default config (no
// sharing, MIG strategy none), plus nvidia.com/gpu.present, which the GPU
// Operator sets and NVIDIA's charts select GPU nodes by.
//
// GFD describes one model per node: on a node of mixed models it labels one
// of them. Here that is the model of GPU 0, so the answer is deterministic.
//
// Left out on purpose: nvidia.com/gpu.machine (GFD reads the host's DMI
// product name, which says nothing about simulated GPUs),
// nvidia.com/gfd.timestamp (it would change on every start), the vGPU,
// IMEX and fabric labels (nothing to describe) and the MIG strategy labels
// (no MIG devices are simulated).
func NodeLabels(spec simulate.Spec) map[string]string {
	products := spec.Products()
	if len(products) == 0 {
		return nil
	}
	p := products[0]
	count := 0
	for _, q := range products {
		if q.Name == p.Name {
			count++
		}
	}
	cc := p.ComputeCapability
	driver := strings.SplitN(simulate.DriverVersion, ".", 3)
	for len(driver) < 3 {
		driver = append(driver, "")
	}
	cuda := capability.CUDAFromNVML(simulate.CUDADriverVersion)
	itoa := strconv.Itoa
	return map[string]string{
		"nvidia.com/gpu.present": "true",

		"nvidia.com/gpu.product":          gfdProductName(p.Name),
		"nvidia.com/gpu.count":            itoa(count),
		"nvidia.com/gpu.replicas":         "1",
		"nvidia.com/gpu.sharing-strategy": "none",
		"nvidia.com/gpu.memory":           strconv.FormatInt(p.MemoryMiB, 10),
		"nvidia.com/gpu.family":           gfdFamily(cc),
		"nvidia.com/gpu.compute.major":    itoa(cc.Major),
		"nvidia.com/gpu.compute.minor":    itoa(cc.Minor),
		"nvidia.com/gpu.mode":             "compute",
		"nvidia.com/mig.capable":          strconv.FormatBool(p.MIG),
		"nvidia.com/mps.capable":          "false",

		"nvidia.com/cuda.driver-version.major":    driver[0],
		"nvidia.com/cuda.driver-version.minor":    driver[1],
		"nvidia.com/cuda.driver-version.revision": driver[2],
		"nvidia.com/cuda.driver-version.full":     simulate.DriverVersion,
		"nvidia.com/cuda.runtime-version.major":   itoa(cuda.Major),
		"nvidia.com/cuda.runtime-version.minor":   itoa(cuda.Minor),
		"nvidia.com/cuda.runtime-version.full":    cuda.String(),
		// GFD still sets the older names beside the new ones.
		"nvidia.com/cuda.driver.major":  driver[0],
		"nvidia.com/cuda.driver.minor":  driver[1],
		"nvidia.com/cuda.driver.rev":    driver[2],
		"nvidia.com/cuda.runtime.major": itoa(cuda.Major),
		"nvidia.com/cuda.runtime.minor": itoa(cuda.Minor),
	}
}

// notInProductLabel is what GFD drops from NVML's product name before it
// joins the words with dashes.
var notInProductLabel = regexp.MustCompile(`[^A-Za-z0-9_. -]`)

// gfdProductName turns NVML's product name into GFD's label value:
// "NVIDIA H100 80GB HBM3" becomes "NVIDIA-H100-80GB-HBM3".
func gfdProductName(name string) string {
	return strings.Join(strings.Fields(notInProductLabel.ReplaceAllString(name, "")), "-")
}

// gfdFamily is GFD's architecture family of a compute capability, in its
// lower-case words (which differ from kquant's Architecture names).
func gfdFamily(cc capability.Version) string {
	switch cc.Major {
	case 1:
		return "tesla"
	case 2:
		return "fermi"
	case 3:
		return "kepler"
	case 5:
		return "maxwell"
	case 6:
		return "pascal"
	case 7:
		if cc.Minor >= 5 {
			return "turing"
		}
		return "volta"
	case 8:
		if cc.Minor >= 9 {
			return "ada-lovelace"
		}
		return "ampere"
	case 9:
		return "hopper"
	case 10, 12:
		return "blackwell"
	case 13:
		return "rubin"
	default:
		return "undefined"
	}
}

// ApplyNodeLabels sets labels on the Node named node, waiting (polling
// every interval) until the Node exists, and retrying other failures, until
// it succeeds or ctx ends.
//
// It writes with a JSON merge patch rather than server-side apply: a PATCH
// never creates the object, whereas an apply to a Node the kubelet has not
// registered yet would create a bare Node under this plugin's name. The
// write is still recorded under FieldManager.
func ApplyNodeLabels(ctx context.Context, client kubernetes.Interface, node string, labels map[string]string, interval time.Duration) error {
	log := logr.FromContextOrDiscard(ctx).WithValues("node", node)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return fmt.Errorf("encoding the label patch: %w", err)
	}
	waiting := false
	err = wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			if !waiting {
				log.Info("Waiting for the kubelet to register the Node before labelling it")
				waiting = true
			}
		default:
			log.Info("Labelling the Node failed, retrying", "err", err.Error())
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("labelling node %s: %w", node, err)
	}
	log.Info("Labelled the Node as GPU feature discovery would", "labels", len(labels), "product", labels["nvidia.com/gpu.product"])
	return nil
}
