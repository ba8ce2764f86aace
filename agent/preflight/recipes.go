// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package preflight

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/validation"
	"github.com/kquant/kquant/config/crd"
)

// ErrConfig is wrapped by every error about what the preflight was asked to
// do (flags, the recipe file, a recipe name found nowhere), as opposed to a
// GPU that failed its check: NVSentinel's check contract gives it its own
// exit code.
var ErrConfig = errors.New("preflight configuration")

// Source says where a recipe was found.
type Source string

// The sources, in the order Resolve looks.
const (
	// SourceFile is the mounted recipe file (--recipe-file).
	SourceFile Source = "file"
	// SourceCatalog is the cluster's ClusterQuantRecipe, read through the API.
	SourceCatalog Source = "catalog"
	// SourceBuiltIn is the catalog embedded in the binary (config/catalog).
	SourceBuiltIn Source = "built-in"
)

// Recipe is one recipe to validate, as resolved.
type Recipe struct {
	Name   string
	Kind   v1alpha1.RecipeKind
	Source Source
	Spec   v1alpha1.QuantRecipeSpec
}

// Snapshot is the recipe as a run records it.
func (r Recipe) Snapshot() v1alpha1.RecipeSnapshot {
	return v1alpha1.RecipeSnapshot{Kind: r.Kind, Name: r.Name, Key: r.Spec.Key(), Spec: *r.Spec.DeepCopy()}
}

// File is what a recipe file holds: recipes by name and, optionally, one
// QuantJob whose mode, level, workload, execution and tolerances replace the
// preflight's defaults (its recipeRef and placement are ignored: the recipes
// are the ones named, the GPUs the pod's).
type File struct {
	Recipes map[string]Recipe
	Job     *v1alpha1.QuantJob

	// schemas are the CRDs' schemas, loaded once for the whole file.
	schemas crd.Schemas
}

// ReadFile decodes the QuantRecipes, ClusterQuantRecipes and at most one
// QuantJob of a multi-document YAML (or JSON) stream, strictly (unknown and
// duplicate fields are errors), with the CRDs' defaults filled in as the API
// server would, and validates each as the API server does. name labels the
// errors.
func ReadFile(name string, r io.Reader) (*File, error) {
	f := &File{Recipes: map[string]Recipe{}, schemas: crd.Schemas{}}
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for i := 1; ; i++ {
		data, err := yr.Read()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: reading %s: %w", ErrConfig, name, err)
		}
		if err := f.add(data); err != nil {
			return nil, fmt.Errorf("%w: %s (document %d): %w", ErrConfig, name, i, err)
		}
	}
}

func (f *File) add(data []byte) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
		return nil
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(j, &tm); err != nil {
		return fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if want := v1alpha1.GroupVersion.String(); tm.APIVersion != want {
		return fmt.Errorf("apiVersion %q is not %s", tm.APIVersion, want)
	}
	spec := field.NewPath("spec")
	switch tm.Kind {
	case string(v1alpha1.RecipeKindNamespaced), string(v1alpha1.RecipeKindCluster):
		var meta metav1.ObjectMeta
		var recipeSpec v1alpha1.QuantRecipeSpec
		if tm.Kind == string(v1alpha1.RecipeKindCluster) {
			r := &v1alpha1.ClusterQuantRecipe{}
			if err := f.decode(j, "clusterquantrecipes", r); err != nil {
				return err
			}
			meta, recipeSpec = r.ObjectMeta, r.Spec
		} else {
			r := &v1alpha1.QuantRecipe{}
			if err := f.decode(j, "quantrecipes", r); err != nil {
				return err
			}
			meta, recipeSpec = r.ObjectMeta, r.Spec
		}
		if meta.Name == "" {
			return fmt.Errorf("%s without metadata.name", tm.Kind)
		}
		if _, dup := f.Recipes[meta.Name]; dup {
			return fmt.Errorf("a second recipe named %q", meta.Name)
		}
		if errs := validation.ValidateQuantRecipeSpec(&recipeSpec, spec); len(errs) > 0 {
			return fmt.Errorf("%s %s: %w", tm.Kind, meta.Name, errs.ToAggregate())
		}
		f.Recipes[meta.Name] = Recipe{Name: meta.Name, Kind: v1alpha1.RecipeKind(tm.Kind), Source: SourceFile, Spec: recipeSpec}
	case "QuantJob":
		if f.Job != nil {
			return errors.New("a second QuantJob; give at most one")
		}
		job := &v1alpha1.QuantJob{}
		if err := f.decode(j, "quantjobs", job); err != nil {
			return err
		}
		f.Job = job
	default:
		return fmt.Errorf("kind %q is not QuantRecipe, ClusterQuantRecipe or QuantJob", tm.Kind)
	}
	return nil
}

// decode decodes j into obj strictly, then again with the defaults of the
// CRD of plural: the strict pass names unknown fields, the second fills in
// what the API server would.
func (f *File) decode(j []byte, plural string, obj any) error {
	if err := crd.DecodeStrict(j, obj); err != nil {
		return err
	}
	schema, err := f.schemas.Load(plural, v1alpha1.GroupVersion.Version)
	if err != nil {
		return err
	}
	return crd.DecodeDefaulted(context.Background(), schema, j, obj, false)
}

// CatalogReader reads a ClusterQuantRecipe of the cluster's catalog by
// name. found is false when the cluster has none of that name; an error
// means the catalog could not be read (no API server, no permission), and
// Resolve then falls back to the built-in catalog.
type CatalogReader func(ctx context.Context, name string) (spec *v1alpha1.QuantRecipeSpec, found bool, err error)

// Resolve finds each named recipe: in the file first (what the workload's
// owner mounted, which may be a recipe of its own), then in the cluster's
// catalog (what the platform installed and may have tuned), then in the
// built-in catalog. A name found nowhere is an ErrConfig error naming the
// places looked in. catalog may be nil (no API server); an error reading it
// is reported to warn and the built-in catalog is used.
func Resolve(ctx context.Context, names []string, file, builtIn *File, catalog CatalogReader, warn func(name string, err error)) ([]Recipe, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: no recipe named (--recipes)", ErrConfig)
	}
	out := make([]Recipe, 0, len(names))
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			return nil, fmt.Errorf("%w: recipe %q named twice", ErrConfig, name)
		}
		seen[name] = true
		r, err := resolveOne(ctx, name, file, builtIn, catalog, warn)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func resolveOne(ctx context.Context, name string, file, builtIn *File, catalog CatalogReader, warn func(string, error)) (Recipe, error) {
	looked := []string{}
	if file != nil {
		if r, ok := file.Recipes[name]; ok {
			return r, nil
		}
		looked = append(looked, "the recipe file")
	}
	if catalog != nil {
		spec, found, err := catalog(ctx, name)
		switch {
		case err != nil:
			if warn != nil {
				warn(name, err)
			}
			looked = append(looked, "the cluster's catalog (unreadable)")
		case found:
			if errs := validation.ValidateQuantRecipeSpec(spec, field.NewPath("spec")); len(errs) > 0 {
				return Recipe{}, fmt.Errorf("%w: ClusterQuantRecipe %s: %w", ErrConfig, name, errs.ToAggregate())
			}
			return Recipe{Name: name, Kind: v1alpha1.RecipeKindCluster, Source: SourceCatalog, Spec: *spec}, nil
		default:
			looked = append(looked, "the cluster's catalog")
		}
	}
	if builtIn != nil {
		if r, ok := builtIn.Recipes[name]; ok {
			r.Source = SourceBuiltIn
			return r, nil
		}
		looked = append(looked, "the built-in catalog")
	}
	return Recipe{}, fmt.Errorf("%w: recipe %q is in none of %s", ErrConfig, name, strings.Join(looked, ", "))
}
