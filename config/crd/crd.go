// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package crd

import (
	"embed"
	"fmt"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"sigs.k8s.io/yaml"
)

//go:embed bases/*.yaml
var bases embed.FS

// Schema is the structural schema of one kind's version.
type Schema struct{ s *structuralschema.Structural }

// Load returns the structural schema of version of the CRD of plural
// (quantjobs, quantrecipes, ...).
func Load(plural, version string) (*Schema, error) {
	data, err := bases.ReadFile("bases/kquant.dev_" + plural + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("reading the CRD of %s: %w", plural, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("decoding the CRD of %s: %w", plural, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
			return nil, fmt.Errorf("converting the schema of %s %s: %w", plural, version, err)
		}
		s, err := structuralschema.NewStructural(internal)
		if err != nil {
			return nil, fmt.Errorf("the schema of %s %s is not structural: %w", plural, version, err)
		}
		return &Schema{s: s}, nil
	}
	return nil, fmt.Errorf("the CRD of %s has no schema of version %s", plural, version)
}

// Default fills in the schema's defaults in obj (an object decoded from
// JSON), as the API server does on create.
func (s *Schema) Default(obj map[string]any) { structuraldefaulting.Default(obj, s.s) }
