// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/validation"
	"github.com/kquant/kquant/config/crd"
	"github.com/kquant/kquant/internal/bench"
)

// document is one YAML document of a manifest file.
type document struct {
	source string // "file.yaml" or "file.yaml (document 2)"
	data   []byte
}

// manifestExtensions are the files a directory contributes, as kubectl's.
var manifestExtensions = []string{".yaml", ".yml", ".json"}

// readManifests reads the files and directories named by -f ("-" is
// stdin) and splits them into documents with the YAML reader kubectl uses.
// A directory contributes its .yaml, .yml and .json files, and its
// subdirectories' with recursive (-R).
func readManifests(paths []string, recursive bool, stdin io.Reader) ([]document, error) {
	var docs []document
	for _, p := range paths {
		if p == "-" {
			d, err := splitDocuments("stdin", stdin)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
			continue
		}
		files, err := expand(p, recursive)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				return nil, usagef("reading %s: %w", f, err)
			}
			d, err := splitDocuments(f, fh)
			_ = fh.Close()
			if err != nil {
				return nil, err
			}
			docs = append(docs, d...)
		}
	}
	return docs, nil
}

// expand is p itself, or the manifest files of directory p in lexical order.
func expand(p string, recursive bool) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, usagef("reading %s: %w", p, err)
	}
	if !st.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != p && !recursive:
			return filepath.SkipDir
		case !d.IsDir() && slices.Contains(manifestExtensions, filepath.Ext(path)):
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, usagef("reading %s: %w", p, err)
	}
	if len(files) == 0 {
		return nil, usagef("%s: no .yaml, .yml or .json files", p)
	}
	return files, nil
}

// splitDocuments splits a stream into its YAML documents.
func splitDocuments(name string, r io.Reader) ([]document, error) {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs []document
	for i := 1; ; i++ {
		data, err := yr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, usagef("reading %s: %w", name, err)
		}
		docs = append(docs, document{source: fmt.Sprintf("%s (document %d)", name, i), data: data})
	}
	if len(docs) == 1 {
		docs[0].source = name
	}
	return docs, nil
}

// manifests are the recipe and the job of a run.
type manifests struct {
	recipe                  *v1alpha1.QuantRecipe
	job                     *v1alpha1.QuantJob
	recipeSource, jobSource string
}

// decodeManifests decodes the QuantRecipes and exactly one QuantJob from the
// documents, strictly (unknown and duplicate fields are errors naming the
// field, as kubectl's server-side field validation does), fills in the CRDs'
// defaults, picks the recipe the job names and validates both as the API
// server would. recipe, when set, overrides the job's spec.recipeRef.name
// (--recipe: one job tried with each recipe). Every error is a usageError.
func decodeManifests(docs []document, recipe string) (*manifests, error) {
	m := &manifests{}
	type named struct {
		recipe *v1alpha1.QuantRecipe
		source string
	}
	var recipes []named
	for _, d := range docs {
		j, err := yaml.YAMLToJSONStrict(d.data)
		if err != nil {
			return nil, usagef("%s: %w", d.source, err)
		}
		if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
			continue // an empty document
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(j, &tm); err != nil {
			return nil, usagef("%s: not a Kubernetes object: %w", d.source, err)
		}
		if tm.APIVersion == "" || tm.Kind == "" {
			return nil, usagef("%s: not a Kubernetes object: apiVersion and kind are required", d.source)
		}
		if want := v1alpha1.GroupVersion.String(); tm.APIVersion != want {
			return nil, usagef("%s: apiVersion %q is not %s", d.source, tm.APIVersion, want)
		}
		var obj any
		plural := ""
		switch tm.Kind {
		case "QuantRecipe":
			r := &v1alpha1.QuantRecipe{}
			obj, plural = r, "quantrecipes"
			recipes = append(recipes, named{r, d.source})
		case "QuantJob":
			if m.job != nil {
				return nil, usagef("%s: a second QuantJob (the first is in %s); give exactly one", d.source, m.jobSource)
			}
			m.job, m.jobSource = &v1alpha1.QuantJob{}, d.source
			obj, plural = m.job, "quantjobs"
		default:
			return nil, usagef("%s: kind %q is not QuantRecipe or QuantJob", d.source, tm.Kind)
		}
		if err := decodeStrict(j, obj); err != nil {
			return nil, usagef("%s: %w", d.source, err)
		}
		// The API server's defaults, from the CRD's structural schema.
		if err := decodeDefaulted(j, plural, obj); err != nil {
			return nil, usagef("%s: %w", d.source, err)
		}
	}
	if m.job == nil {
		if len(recipes) == 0 {
			return nil, usagef("no QuantRecipe and no QuantJob given; use -f RECIPE.yaml -f JOB.yaml")
		}
		return nil, usagef("no QuantJob given; add -f JOB.yaml")
	}
	if recipe != "" {
		m.job.Spec.RecipeRef.Name = recipe
	}
	ref := m.job.Spec.RecipeRef.Name
	var names []string
	for _, r := range recipes {
		if r.recipe.Name != ref {
			names = append(names, r.recipe.Name)
			continue
		}
		if m.recipe != nil {
			return nil, usagef("%s: a second QuantRecipe %q (the first is in %s)", r.source, ref, m.recipeSource)
		}
		m.recipe, m.recipeSource = r.recipe, r.source
	}
	if m.recipe == nil {
		given := "none was given; add -f RECIPE.yaml"
		if len(names) > 0 {
			given = "the recipes given are " + strings.Join(names, ", ")
		}
		return nil, usagef("%s: spec.recipeRef.name %q names no given QuantRecipe: %s", m.jobSource, ref, given)
	}
	if errs := validation.ValidateQuantRecipeSpec(&m.recipe.Spec, field.NewPath("spec")); len(errs) > 0 {
		return nil, usagef("%s: %w", m.recipeSource, errs.ToAggregate())
	}
	if l := m.job.Spec.Level; l != v1alpha1.LevelQuick && l != v1alpha1.LevelStandard && l != v1alpha1.LevelExtended {
		return nil, usagef("%s: %v", m.jobSource, field.NotSupported(field.NewPath("spec", "level"), string(l), []string{"Quick", "Standard", "Extended"}))
	}
	// The recipe is valid by now, so what Spec.Validate finds is the job's.
	spec := m.spec()
	if err := spec.Validate(); err != nil {
		return nil, usagef("%s: %w", m.jobSource, err)
	}
	return m, nil
}

// decodeStrict decodes j into obj, failing on unknown and duplicate fields.
func decodeStrict(j []byte, obj any) error {
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

// decodeDefaulted decodes j into obj with the defaults of the CRD of plural.
func decodeDefaulted(j []byte, plural string, obj any) error {
	schema, err := crd.Load(plural, v1alpha1.GroupVersion.Version)
	if err != nil {
		return err
	}
	var u map[string]any
	if err := json.Unmarshal(j, &u); err != nil {
		return err
	}
	schema.Default(u)
	defaulted, err := json.Marshal(u)
	if err != nil {
		return fmt.Errorf("encoding the defaulted object: %w", err)
	}
	return json.Unmarshal(defaulted, obj)
}

// spec is the run the manifests describe, with the level's presets filled in
// as the job controller does (the API server's defaults are in by now).
func (m *manifests) spec() bench.Spec {
	job := m.job.Spec
	return bench.Spec{
		RecipeName: m.recipe.Name,
		RecipeKey:  m.recipe.Spec.Key(),
		Recipe:     m.recipe.Spec,
		Mode:       job.Mode,
		Workload:   *job.Workload.DeepCopy(),
		Execution:  v1alpha1.ExecutionForLevel(job.Level, job.Execution),
		Tolerances: job.Tolerances,
	}
}
