// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package dradriver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// cdiVersion is the CDI spec version written: 0.6.0 is the oldest with
// every field used here, and containerd 2 reads it.
const cdiVersion = "0.6.0"

// cdiClass is the CDI class of the driver's devices (the kind is
// k8s.<driver>/gpu, as the DRA example driver names its kinds).
const cdiClass = "gpu"

// cdiSpec is the part of a CDI spec (github.com/cncf-tags/container-device-interface,
// specs-go) that the driver writes: devices whose only edits are environment
// variables.
type cdiSpec struct {
	Version string      `json:"cdiVersion"`
	Kind    string      `json:"kind"`
	Devices []cdiDevice `json:"devices"`
}

type cdiDevice struct {
	Name           string   `json:"name"`
	ContainerEdits cdiEdits `json:"containerEdits"`
}

type cdiEdits struct {
	Env []string `json:"env,omitempty"`
}

// cdiStore writes and removes one CDI spec file per prepared claim in dir.
type cdiStore struct {
	dir  string
	kind string // vendor/class
}

func newCDIStore(dir, driverName string) cdiStore {
	return cdiStore{dir: dir, kind: "k8s." + driverName + "/" + cdiClass}
}

// deviceName is the CDI device of one GPU of one claim: unique per claim, so
// that a runtime's cached spec of an earlier claim can never match.
func deviceName(claim types.UID, gpu string) string { return string(claim) + "-" + gpu }

// deviceID is the fully qualified CDI device ID the kubelet passes on.
func (s cdiStore) deviceID(claim types.UID, gpu string) string {
	return s.kind + "=" + deviceName(claim, gpu)
}

// prefix starts every spec file of the driver: vendor-class_, as CDI's
// tooling names spec files.
func (s cdiStore) prefix() string { return strings.ReplaceAll(s.kind, "/", "-") + "_" }

func (s cdiStore) path(claim types.UID) string {
	return filepath.Join(s.dir, s.prefix()+string(claim)+".json")
}

// write writes the spec of a claim that got gpus (device names): every CDI
// device sets NVIDIA_VISIBLE_DEVICES and KQUANT_SIMULATED_GPUS to all of
// uuids, so a container that gets the claim sees the same list whichever of
// its devices the runtime applies last.
func (s cdiStore) write(claim types.UID, gpus, uuids []string) error {
	visible := strings.Join(uuids, ",")
	spec := cdiSpec{Version: cdiVersion, Kind: s.kind}
	for _, g := range gpus {
		spec.Devices = append(spec.Devices, cdiDevice{
			Name: deviceName(claim, g),
			ContainerEdits: cdiEdits{Env: []string{
				"NVIDIA_VISIBLE_DEVICES=" + visible,
				"KQUANT_SIMULATED_GPUS=" + visible,
			}},
		})
	}
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the CDI spec of claim %s: %w", claim, err)
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return fmt.Errorf("making the CDI directory: %w", err)
	}
	// Written aside and renamed, so a runtime never reads half a spec.
	final := s.path(claim)
	tmp := filepath.Join(s.dir, ".tmp-"+filepath.Base(final))
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the CDI spec of claim %s: %w", claim, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("writing the CDI spec of claim %s: %w", claim, err)
	}
	return nil
}

// remove removes a claim's spec; a missing one is not an error.
func (s cdiStore) remove(claim types.UID) error {
	if err := os.Remove(s.path(claim)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the CDI spec of claim %s: %w", claim, err)
	}
	return nil
}

// load reads the driver's specs back: which GPUs (device names) each claim
// was prepared with.
func (s cdiStore) load() (map[types.UID][]string, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[types.UID][]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the CDI directory: %w", err)
	}
	out := map[types.UID][]string{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, s.prefix()) || !strings.HasSuffix(name, ".json") {
			continue
		}
		claim := types.UID(strings.TrimSuffix(strings.TrimPrefix(name, s.prefix()), ".json"))
		data, err := os.ReadFile(filepath.Join(s.dir, name))
		if err != nil {
			return nil, fmt.Errorf("reading CDI spec %s: %w", name, err)
		}
		var spec cdiSpec
		if err := json.Unmarshal(data, &spec); err != nil {
			return nil, fmt.Errorf("decoding CDI spec %s: %w", name, err)
		}
		gpus := make([]string, 0, len(spec.Devices))
		for _, d := range spec.Devices {
			gpus = append(gpus, strings.TrimPrefix(d.Name, string(claim)+"-"))
		}
		out[claim] = gpus
	}
	return out, nil
}
