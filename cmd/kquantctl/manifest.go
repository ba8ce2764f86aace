// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kquant/kquant/api/v1alpha1"
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
		if u, err := url.Parse(p); err == nil && u.Scheme != "" && u.Host != "" {
			return nil, usagef("-f %s: URLs are not supported; download the manifest and give its path, or pipe it in with -f -", p)
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
// defaults and checks every object with the API server's own rules: its
// metadata validation, and the CRD's schema and CEL rules (config/crd). It
// picks the recipe the job names and checks the pair as the QuantRun the
// job controller would create from them, whose CEL rules need both (the
// group alignment). recipeFlag, when set, overrides the job's
// spec.recipeRef.name (--recipe: one job tried with each recipe). Every
// error is a usageError naming the file, and the flag where a value came
// from one.
func decodeManifests(ctx context.Context, docs []document, recipeFlag string) (*manifests, error) {
	m := &manifests{}
	type named struct {
		recipe *v1alpha1.QuantRecipe
		source string
	}
	var recipes []named
	schemas := crd.Schemas{}
	for _, d := range docs {
		j, err := yaml.YAMLToJSONStrict(d.data)
		if err != nil {
			if f, ok := nonFiniteNumber(d.data); ok {
				return nil, usagef("%s: %s", d.source, f)
			}
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
		var meta *metav1.ObjectMeta
		plural := ""
		switch tm.Kind {
		case "QuantRecipe":
			r := &v1alpha1.QuantRecipe{}
			obj, meta, plural = r, &r.ObjectMeta, "quantrecipes"
			recipes = append(recipes, named{r, d.source})
		case "QuantJob":
			if m.job != nil {
				return nil, usagef("%s: a second QuantJob (the first is in %s); give exactly one", d.source, m.jobSource)
			}
			m.job, m.jobSource = &v1alpha1.QuantJob{}, d.source
			obj, meta, plural = m.job, &m.job.ObjectMeta, "quantjobs"
		default:
			return nil, usagef("%s: kind %q is not QuantRecipe or QuantJob", d.source, tm.Kind)
		}
		if err := crd.DecodeStrict(j, obj); err != nil {
			return nil, usagef("%s: %w", d.source, err)
		}
		if errs := validateObjectMeta(meta); len(errs) > 0 {
			return nil, usagef("%s: %w", d.source, errs.ToAggregate())
		}
		// The API server's defaults and rules, from the CRD's structural schema.
		if err := decodeChecked(ctx, schemas, j, plural, obj); err != nil {
			return nil, usagef("%s: %w", d.source, err)
		}
	}
	if m.job == nil {
		if len(recipes) == 0 {
			return nil, usagef("no QuantRecipe and no QuantJob given; use -f RECIPE.yaml -f JOB.yaml")
		}
		return nil, usagef("no QuantJob given; add -f JOB.yaml")
	}
	ref, refSource := m.job.Spec.RecipeRef.Name, m.jobSource+": spec.recipeRef.name"
	if recipeFlag != "" {
		m.job.Spec.RecipeRef.Name = recipeFlag
		ref, refSource = recipeFlag, "--recipe"
	}
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
		return nil, usagef("%s %q names no given QuantRecipe: %s", refSource, ref, given)
	}
	if err := m.checkAsRun(ctx, schemas); err != nil {
		return nil, err
	}
	// What only a run can check (explicit sizes adding up to the rows); the
	// recipe is valid by now, so what Spec.Validate finds is the job's.
	spec := m.spec()
	if err := spec.Validate(); err != nil {
		return nil, usagef("%s: %w", m.jobSource, err)
	}
	return m, nil
}

// validateObjectMeta checks an object's metadata as the API server checks a
// namespaced object's on create: a name (or generateName) that is a DNS
// subdomain. The namespace is the cluster's business; a manifest without
// one is checked as if in "default".
func validateObjectMeta(meta *metav1.ObjectMeta) field.ErrorList {
	m := meta.DeepCopy()
	if m.Namespace == "" {
		m.Namespace = metav1.NamespaceDefault
	}
	return apivalidation.ValidateObjectMeta(m, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
}

// checkAsRun checks the recipe and the job together as the QuantRun the job
// controller creates from them, with the QuantRun CRD's rules; an error
// names the job's field (the run's spec repeats the job's paths).
func (m *manifests) checkAsRun(ctx context.Context, schemas crd.Schemas) error {
	spec := m.spec()
	run := &v1alpha1.QuantRun{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "QuantRun"},
		ObjectMeta: metav1.ObjectMeta{Name: m.job.Name, Namespace: metav1.NamespaceDefault},
		Spec: v1alpha1.QuantRunSpec{
			JobRef:     v1alpha1.JobReference{Name: m.job.Name, UID: "local"},
			Recipe:     v1alpha1.RecipeSnapshot{Name: m.recipe.Name, Key: spec.RecipeKey, Spec: m.recipe.Spec},
			Mode:       spec.Mode,
			Workload:   spec.Workload,
			Execution:  spec.Execution,
			Tolerances: spec.Tolerances,
		},
	}
	j, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("encoding the run of %s: %w", m.jobSource, err)
	}
	if err := decodeChecked(ctx, schemas, j, "quantruns", &v1alpha1.QuantRun{}); err != nil {
		return usagef("%s with QuantRecipe %s (%s): %w", m.jobSource, m.recipe.Name, m.recipeSource, err)
	}
	return nil
}

// decodeChecked decodes j into obj with the defaults of the CRD of plural,
// after checking the defaulted object with the CRD's schema and CEL rules.
func decodeChecked(ctx context.Context, schemas crd.Schemas, j []byte, plural string, obj any) error {
	schema, err := schemas.Load(plural, v1alpha1.GroupVersion.Version)
	if err != nil {
		return err
	}
	return crd.DecodeDefaulted(ctx, schema, j, obj, true)
}

// nonFiniteNumber names the first field whose YAML value is .nan or ±.inf:
// YAML has them, JSON (and so the API) does not, and the JSON encoder's
// error names no field.
func nonFiniteNumber(data []byte) (string, bool) {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(data, &root); err != nil {
		return "", false
	}
	var walk func(n *yamlv3.Node, path *field.Path) (string, bool)
	walk = func(n *yamlv3.Node, path *field.Path) (string, bool) {
		switch n.Kind {
		case yamlv3.DocumentNode:
			for _, c := range n.Content {
				if f, ok := walk(c, path); ok {
					return f, true
				}
			}
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if f, ok := walk(n.Content[i+1], path.Child(n.Content[i].Value)); ok {
					return f, true
				}
			}
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				if f, ok := walk(c, path.Index(i)); ok {
					return f, true
				}
			}
		case yamlv3.ScalarNode:
			var v float64
			if n.ShortTag() == "!!float" && n.Decode(&v) == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
				return fmt.Sprintf("%s: %s (line %d) is not a number JSON or the API can carry; write a decimal such as \"25\"", path, n.Value, n.Line), true
			}
		}
		return "", false
	}
	return walk(&root, nil)
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
