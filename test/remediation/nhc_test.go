// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package remediation

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/kquant/kquant/domain/gate"
	"github.com/kquant/kquant/domain/supportlabels"
)

// docsPage holds the NodeHealthCheck example; nhcCRD is NodeHealthCheck's
// CRD as its repository publishes it (URL and commit in the file's header).
const (
	docsPage = "../../docs/gates-and-schedules.md"
	nhcCRD   = "testdata/remediation.medik8s.io_nodehealthchecks.yaml"
)

// nhcSchema is the structural schema of the CRD's served version and a
// validator for it, as the API server builds them.
func nhcSchema(t *testing.T) (*structuralschema.Structural, apiservervalidation.SchemaValidator) {
	t.Helper()
	b, err := os.ReadFile(nhcCRD)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		t.Fatalf("decoding %s: %v", nhcCRD, err)
	}
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Served && v.Storage })
	if i < 0 || crd.Spec.Versions[i].Schema == nil {
		t.Fatalf("%s: no served storage version with a schema", nhcCRD)
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[i].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatalf("%s: not a structural schema: %v", nhcCRD, err)
	}
	if errs := structuralschema.ValidateStructural(nil, structural); len(errs) > 0 {
		t.Fatalf("%s: not a structural schema: %v", nhcCRD, errs.ToAggregate())
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		t.Fatal(err)
	}
	return structural, validator
}

// docsNodeHealthChecks are the NodeHealthCheck manifests of the docs page's
// YAML blocks.
func docsNodeHealthChecks(t *testing.T) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Clean(docsPage))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, block := range strings.Split(string(b), "```yaml\n")[1:] {
		body, _, _ := strings.Cut(block, "```")
		if !strings.Contains(body, "kind: NodeHealthCheck") {
			continue
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(body), &obj); err != nil {
			t.Fatalf("%s: a NodeHealthCheck block is not YAML: %v", docsPage, err)
		}
		out = append(out, obj)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no NodeHealthCheck example", docsPage)
	}
	return out
}

// validate is what the API server checks of obj on create: the schema
// (types, patterns, required fields), list-map keys, and no field the
// schema does not know (the server would prune it silently).
func validate(structural *structuralschema.Structural, validator apiservervalidation.SchemaValidator, obj map[string]any) field.ErrorList {
	errs := apiservervalidation.ValidateCustomResource(nil, obj, validator)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, structural, obj)...)
	opts := structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}
	for _, path := range pruning.PruneWithOptions(deepCopy(obj), structural, true, opts) {
		errs = append(errs, field.Forbidden(field.NewPath(path), "unknown field"))
	}
	return errs
}

func deepCopy(obj map[string]any) map[string]any {
	b, err := yaml.Marshal(obj)
	if err != nil {
		panic(err)
	}
	out := map[string]any{}
	if err := yaml.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

func TestDocsNodeHealthCheckIsValid(t *testing.T) {
	structural, validator := nhcSchema(t)
	for _, obj := range docsNodeHealthChecks(t) {
		if errs := validate(structural, validator, obj); len(errs) > 0 {
			t.Errorf("%s: the NodeHealthCheck example is invalid by NHC's schema: %v", docsPage, errs.ToAggregate())
		}
	}
}

// TestValidatorCatchesMistakes shows the check has teeth: each broken copy
// of a valid manifest is refused.
func TestValidatorCatchesMistakes(t *testing.T) {
	structural, validator := nhcSchema(t)
	valid := docsNodeHealthChecks(t)[0]
	conditions := func(obj map[string]any) []any { return obj["spec"].(map[string]any)["unhealthyConditions"].([]any) }
	tests := []struct {
		name    string
		breakIt func(obj map[string]any)
	}{
		{name: "a duration that is not a Go duration", breakIt: func(obj map[string]any) {
			conditions(obj)[0].(map[string]any)["duration"] = "ten minutes"
		}},
		{name: "a condition without a status", breakIt: func(obj map[string]any) {
			delete(conditions(obj)[0].(map[string]any), "status")
		}},
		{name: "the same type and status twice", breakIt: func(obj map[string]any) {
			spec := obj["spec"].(map[string]any)
			spec["unhealthyConditions"] = append(conditions(obj), conditions(obj)[0])
		}},
		{name: "a field NHC does not know", breakIt: func(obj map[string]any) {
			obj["spec"].(map[string]any)["remediateAfter"] = "10m"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := deepCopy(valid)
			tt.breakIt(obj)
			if errs := validate(structural, validator, obj); len(errs) == 0 {
				t.Errorf("accepted: %v", obj)
			}
		})
	}
}

func TestDocsNodeHealthCheckNamesKquantConditions(t *testing.T) {
	var known []string
	for _, f := range supportlabels.Families() {
		known = append(known, string(gate.ConditionType(f)))
	}
	for _, obj := range docsNodeHealthChecks(t) {
		b, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range obj["spec"].(map[string]any)["unhealthyConditions"].([]any) {
			typ, _ := c.(map[string]any)["type"].(string)
			if !slices.Contains(known, typ) {
				t.Errorf("%s: NodeHealthCheck names condition %q; kquant sets only %q\n%s", docsPage, typ, known, bytes.TrimSpace(b))
			}
		}
	}
}
