// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package crd

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	schemacel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

//go:embed bases/*.yaml
var bases embed.FS

// Schema is the structural schema of one kind's version, with the OpenAPI
// validator and the CEL rules the API server checks on create.
type Schema struct {
	s         *structuralschema.Structural
	validator apiservervalidation.SchemaValidator
	cel       *schemacel.Validator
}

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
		validator, _, err := apiservervalidation.NewSchemaValidator(internal)
		if err != nil {
			return nil, fmt.Errorf("the schema of %s %s has no validator: %w", plural, version, err)
		}
		return &Schema{s: s, validator: validator, cel: schemacel.NewValidator(s, true, celconfig.PerCallLimit)}, nil
	}
	return nil, fmt.Errorf("the CRD of %s has no schema of version %s", plural, version)
}

// Default fills in the schema's defaults in obj (an object decoded from
// JSON), as the API server does on create.
func (s *Schema) Default(obj map[string]any) { structuraldefaulting.Default(obj, s.s) }

// Validate checks obj (defaulted, decoded from JSON) as the API server checks
// a new object of this kind: the OpenAPI schema (types, enums, bounds,
// required fields), then the x-kubernetes-validations CEL rules with the API
// server's cost limits. The errors name the fields as the API server's
// refusal does (spec.level, spec.workload.groups.sizes, ...). metadata is
// not checked here: the API server checks it apart from the schema.
func (s *Schema) Validate(ctx context.Context, obj map[string]any) field.ErrorList {
	errs := apiservervalidation.ValidateCustomResource(nil, obj, s.validator)
	if len(errs) > 0 {
		// CEL rules assume a schema-valid object, as the API server's do.
		return errs
	}
	celErrs, _ := s.cel.Validate(ctx, nil, s.s, obj, nil, celconfig.RuntimeCELCostBudget)
	return celErrs
}

// DecodeStrict decodes the JSON j into obj as the API server's strict field
// validation does: an unknown or duplicate field is an error, each named.
// Manifests read from files (kquantctl's, the preflight's recipe file) go
// through it so that a misspelt field is refused rather than dropped.
func DecodeStrict(j []byte, obj any) error {
	strict, err := sjson.UnmarshalStrict(j, obj, sjson.DisallowDuplicateFields, sjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// Schemas loads each kind's schema once for a reader of many manifests:
// loading one compiles its CEL rules. Keyed by plural; the zero value is not
// usable, make one with make(Schemas) or Schemas{}.
type Schemas map[string]*Schema

// Load returns the schema of plural at the API's version, loading it on
// first use.
func (s Schemas) Load(plural, version string) (*Schema, error) {
	if schema, ok := s[plural]; ok {
		return schema, nil
	}
	schema, err := Load(plural, version)
	if err != nil {
		return nil, err
	}
	s[plural] = schema
	return schema, nil
}

// DecodeDefaulted decodes the JSON j into obj with the defaults of schema
// filled in, as the API server stores an object. With check set, the
// defaulted object must also pass the schema and its CEL rules.
func DecodeDefaulted(ctx context.Context, schema *Schema, j []byte, obj any, check bool) error {
	// apimachinery's JSON decoding, as the API server's: integers stay
	// int64, which the CEL rules' integer fields want.
	var u map[string]any
	if err := utiljson.Unmarshal(j, &u); err != nil {
		return err
	}
	schema.Default(u)
	if check {
		if errs := schema.Validate(ctx, u); len(errs) > 0 {
			return errs.ToAggregate()
		}
	}
	defaulted, err := json.Marshal(u)
	if err != nil {
		return fmt.Errorf("encoding the defaulted object: %w", err)
	}
	return json.Unmarshal(defaulted, obj)
}
