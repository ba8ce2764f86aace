// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gpulabels

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
)

// dcgm-exporter's GPU labels whose names never changed.
const (
	// GPU is the NVML index (the parent GPU's for a MIG device), not a UUID.
	GPU = "gpu"
	// ModelName is the GPU's product name.
	ModelName = "modelName"
	// GPUInstanceProfile and GPUInstanceID are a MIG device's GPU instance
	// ("2g.20gb", "3"); empty, and so absent in Prometheus, for a whole GPU.
	GPUInstanceProfile = "GPU_I_PROFILE"
	GPUInstanceID      = "GPU_I_ID"
)

// Names are the two label names that changed between dcgm-exporter releases.
type Names struct {
	// Hostname names the node: "hostname" since NVIDIA/dcgm-exporter#655
	// (its main branch, after release 4.5.3-4.8.2), "Hostname" for the
	// releases before.
	Hostname string
	// UUID names the GPU's UUID: "UUID", or "uuid" for an exporter run with
	// --use-old-namespace.
	UUID string
}

// Default are dcgm-exporter's current names.
func Default() Names { return Names{Hostname: "hostname", UUID: "UUID"} }

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Validate reports a name that is no Prometheus label name, or one that
// clashes with another GPU label or with one of reserved (the series' own
// labels).
func (n Names) Validate(reserved ...string) error {
	taken := map[string]bool{GPU: true, ModelName: true, GPUInstanceProfile: true, GPUInstanceID: true}
	for _, r := range reserved {
		taken[r] = true
	}
	for _, name := range []string{n.Hostname, n.UUID} {
		if !labelName.MatchString(name) || strings.HasPrefix(name, "__") {
			return fmt.Errorf("%q is not a Prometheus label name", name)
		}
		if taken[name] {
			return fmt.Errorf("label name %q is taken by another of kquant's labels", name)
		}
		taken[name] = true
	}
	return nil
}

// Labels are the identity labels of a per-GPU series, in order, then extra.
func (n Names) Labels(extra ...string) []string {
	return append([]string{n.Hostname, n.UUID, GPU, ModelName, GPUInstanceProfile, GPUInstanceID}, extra...)
}

// Help says which labels identify the GPU, for metrics' help texts.
func (n Names) Help() string {
	return fmt.Sprintf("labels %s, %s, gpu (NVML index), modelName, GPU_I_PROFILE and GPU_I_ID (a MIG device; %s and gpu are then its parent GPU's), as dcgm-exporter's",
		n.Hostname, n.UUID, n.UUID)
}

// RegisterFlags adds --metrics-hostname-label and --metrics-uuid-label to
// fs, defaulting n to Default.
func RegisterFlags(fs *flag.FlagSet, n *Names) {
	d := Default()
	fs.StringVar(&n.Hostname, "metrics-hostname-label", d.Hostname, `name of the node label of per-GPU metrics, as the fleet's dcgm-exporter names it ("Hostname" for dcgm-exporter releases up to 4.5.3-4.8.2, before its main branch renamed it)`)
	fs.StringVar(&n.UUID, "metrics-uuid-label", d.UUID, `name of the GPU UUID label of per-GPU metrics, as the fleet's dcgm-exporter names it ("uuid" with its --use-old-namespace)`)
}

// InstanceProfile is the GPU instance profile of a MIG device profile as
// NVIDIA's device plugin names it: the compute-instance profile "1c.2g.20gb"
// lives in the GPU instance "2g.20gb", which is what GPU_I_PROFILE says.
func InstanceProfile(profile string) string {
	if first, rest, ok := strings.Cut(profile, "."); ok && strings.HasSuffix(first, "c") && strings.Count(profile, ".") == 2 {
		return rest
	}
	return profile
}
