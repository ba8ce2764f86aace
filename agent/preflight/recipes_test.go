// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package preflight

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/config/catalog"
)

// strictFile is a recipe of the workload's own beside a catalog name, and
// a QuantJob with a tolerance no recipe meets.
const strictFile = `apiVersion: kquant.dev/v1alpha1
kind: QuantRecipe
metadata: {name: mine}
spec: {scheme: MXFP8BlockScaling}
---
apiVersion: kquant.dev/v1alpha1
kind: ClusterQuantRecipe
metadata: {name: nvfp4}
spec:
  scheme: NVFP4BlockScaling
  nvfp4: {stochasticRounding: false}
---
apiVersion: kquant.dev/v1alpha1
kind: QuantJob
metadata: {name: strict}
spec:
  recipeRef: {name: ignored}
  mode: Validation
  level: Standard
  workload:
    shapes: [{rows: 64, cols: 128}]
  tolerances: {minSNRdB: "200"}
`

func mustRead(t *testing.T, name, data string) *File {
	t.Helper()
	f, err := ReadFile(name, strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestReadFile(t *testing.T) {
	f := mustRead(t, "strict.yaml", strictFile)
	if got := f.Recipes["mine"]; got.Kind != v1alpha1.RecipeKindNamespaced || got.Source != SourceFile || got.Spec.Scheme != v1alpha1.SchemeMXFP8BlockScaling {
		t.Errorf("recipe mine = %+v", got)
	}
	if got := f.Recipes["nvfp4"]; got.Kind != v1alpha1.RecipeKindCluster || *got.Spec.NVFP4.StochasticRounding {
		t.Errorf("recipe nvfp4 = %+v", got)
	}
	// The CRD's defaults are in, as the API server would fill them.
	if f.Job == nil || f.Job.Spec.Workload.Operation != v1alpha1.OperationQuantize || f.Job.Spec.Workload.InputDType != v1alpha1.DTypeBF16 {
		t.Errorf("job = %+v", f.Job)
	}

	bad := []struct {
		name, data, wantErr string
	}{
		{"unknown field", "apiVersion: kquant.dev/v1alpha1\nkind: QuantRecipe\nmetadata: {name: a}\nspec: {scheme: MXFP8BlockScaling, bogus: 1}\n", `unknown field "spec.bogus"`},
		{"unknown kind", "apiVersion: kquant.dev/v1alpha1\nkind: QuantGatePolicy\nmetadata: {name: a}\n", "is not QuantRecipe, ClusterQuantRecipe or QuantJob"},
		{"other group", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", `apiVersion "v1" is not kquant.dev/v1alpha1`},
		{"two recipes of one name", "apiVersion: kquant.dev/v1alpha1\nkind: QuantRecipe\nmetadata: {name: a}\nspec: {scheme: MXFP8BlockScaling}\n---\napiVersion: kquant.dev/v1alpha1\nkind: ClusterQuantRecipe\nmetadata: {name: a}\nspec: {scheme: MXFP8BlockScaling}\n", `a second recipe named "a"`},
		{"invalid recipe", "apiVersion: kquant.dev/v1alpha1\nkind: QuantRecipe\nmetadata: {name: a}\nspec: {scheme: MXFP8BlockScaling, format: E2M1}\n", "spec.format"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFile("f.yaml", strings.NewReader(tc.data))
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want ErrConfig with %q", err, tc.wantErr)
			}
		})
	}
}

func TestBuiltInCatalogHoldsTheRecipes(t *testing.T) {
	f := mustRead(t, catalog.Name, string(catalog.YAML()))
	for _, name := range []string{"nvfp4", "mxfp8", "fp8-block-scaling", "fp8-current-scaling", "fp8-delayed-scaling"} {
		if r, ok := f.Recipes[name]; !ok || r.Kind != v1alpha1.RecipeKindCluster {
			t.Errorf("built-in catalog: %s = %+v, %v", name, r, ok)
		}
	}
}

func TestResolve(t *testing.T) {
	file := mustRead(t, "strict.yaml", strictFile)
	builtIn := mustRead(t, catalog.Name, string(catalog.YAML()))
	clusterMXFP8 := builtIn.Recipes["mxfp8"].Spec
	clusterMXFP8.MXFP8 = &v1alpha1.MXFP8Options{ScaleRounding: "TE", TwoDimensionalWeights: new(true)}
	inCluster := func(_ context.Context, name string) (*v1alpha1.QuantRecipeSpec, bool, error) {
		if name == "mxfp8" {
			return clusterMXFP8.DeepCopy(), true, nil
		}
		return nil, false, nil
	}
	unreadable := func(context.Context, string) (*v1alpha1.QuantRecipeSpec, bool, error) {
		return nil, false, errors.New("forbidden")
	}
	cases := []struct {
		name        string
		names       []string
		file        *File
		catalog     CatalogReader
		wantSources []Source
		wantWarned  int
		wantErr     string
	}{
		{name: "the file first, then the cluster, then the built-in", names: []string{"nvfp4", "mxfp8", "fp8-block-scaling"},
			file: file, catalog: inCluster, wantSources: []Source{SourceFile, SourceCatalog, SourceBuiltIn}},
		{name: "no API server: built-in", names: []string{"nvfp4", "mxfp8"}, wantSources: []Source{SourceBuiltIn, SourceBuiltIn}},
		{name: "an unreadable catalog falls back to the built-in", names: []string{"mxfp8"}, catalog: unreadable,
			wantSources: []Source{SourceBuiltIn}, wantWarned: 1},
		{name: "a recipe of the file alone", names: []string{"mine"}, file: file, wantSources: []Source{SourceFile}},
		{name: "a name found nowhere", names: []string{"nope"}, file: file, catalog: inCluster,
			wantErr: `recipe "nope" is in none of the recipe file, the cluster's catalog, the built-in catalog`},
		{name: "a name twice", names: []string{"mxfp8", "mxfp8"}, wantErr: `recipe "mxfp8" named twice`},
		{name: "no names", wantErr: "no recipe named"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			warned := 0
			got, err := Resolve(context.Background(), tc.names, tc.file, builtIn, tc.catalog, func(string, error) { warned++ })
			if tc.wantErr != "" {
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want ErrConfig with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var sources []Source
			for i, r := range got {
				sources = append(sources, r.Source)
				if r.Name != tc.names[i] {
					t.Errorf("recipe %d is %s, want %s", i, r.Name, tc.names[i])
				}
			}
			if diff := cmp.Diff(tc.wantSources, sources); diff != "" {
				t.Errorf("sources (-want +got):\n%s", diff)
			}
			if warned != tc.wantWarned {
				t.Errorf("warned %d times, want %d", warned, tc.wantWarned)
			}
		})
	}
}

func TestSettingsFor(t *testing.T) {
	file := mustRead(t, "strict.yaml", strictFile)
	cases := []struct {
		name          string
		job           *v1alpha1.QuantJob
		level         v1alpha1.Level
		wantLevel     v1alpha1.Level
		wantIter      int32
		wantShape     v1alpha1.Shape
		wantTolerance v1alpha1.Tolerances
		wantErr       string
	}{
		{name: "defaults: Quick, a gradient tensor, bit-exact", wantLevel: v1alpha1.LevelQuick, wantIter: 20,
			wantShape: v1alpha1.Shape{Rows: 1024, Cols: 2048}, wantTolerance: v1alpha1.Tolerances{RequireBitExact: true}},
		{name: "the file's job", job: file.Job, wantLevel: v1alpha1.LevelStandard, wantIter: 200,
			wantShape: v1alpha1.Shape{Rows: 64, Cols: 128}, wantTolerance: v1alpha1.Tolerances{MinSNRdB: "200"}},
		{name: "--level beats the file's", job: file.Job, level: v1alpha1.LevelQuick, wantLevel: v1alpha1.LevelQuick, wantIter: 20,
			wantShape: v1alpha1.Shape{Rows: 64, Cols: 128}, wantTolerance: v1alpha1.Tolerances{MinSNRdB: "200"}},
		{name: "an unknown level", level: "Fast", wantErr: `level: Unsupported value: "Fast"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := SettingsFor(tc.job, tc.level)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want ErrConfig with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Level != tc.wantLevel || *s.Execution.Iterations != tc.wantIter || s.Mode != v1alpha1.JobModeValidation {
				t.Errorf("level %s iterations %d mode %s", s.Level, *s.Execution.Iterations, s.Mode)
			}
			if diff := cmp.Diff([]v1alpha1.Shape{tc.wantShape}, s.Workload.Shapes); diff != "" {
				t.Errorf("shapes (-want +got):\n%s", diff)
			}
			if s.Tolerances != tc.wantTolerance {
				t.Errorf("tolerances %+v, want %+v", s.Tolerances, tc.wantTolerance)
			}
			if err := s.Validate([]Recipe{file.Recipes["mine"], file.Recipes["nvfp4"]}); err != nil {
				t.Errorf("validate: %v", err)
			}
		})
	}
}
