// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/internal/logging"
)

// FieldManagerCRDs is the field manager of ApplyCRDs' applies.
const FieldManagerCRDs = "kquant-crd-upgrade"

// ApplyCRDs server-side applies, with ForceOwnership, every
// CustomResourceDefinition in the *.yaml files of dir (a mounted ConfigMap of
// the chart's crds/), in file order. Anything but a CRD is an error: the
// hook's permissions cover CRDs only.
func ApplyCRDs(ctx context.Context, c client.Client, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	if len(files) == 0 {
		return fmt.Errorf("no *.yaml in %s", dir)
	}
	sort.Strings(files)
	log := logging.FromContext(ctx)
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				return fmt.Errorf("%s: %s %s is not a CustomResourceDefinition", f, o.GetKind(), o.GetName())
			}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(FieldManagerCRDs), client.ForceOwnership); err != nil {
				return fmt.Errorf("applying CRD %s: %w", o.GetName(), err)
			}
			log.Info("Applied CRD", "crd", o.GetName())
		}
	}
	return nil
}

// readObjects decodes the YAML documents of a file, skipping empty ones.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}
