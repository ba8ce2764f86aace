package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/validation"
	"github.com/kquant/kquant/internal/bench"
)

// document is one YAML document of a manifest file.
type document struct {
	source string // "file.yaml" or "file.yaml (document 2)"
	data   []byte
}

// docSeparator is a YAML document separator line ("---", optionally
// followed by a comment or spaces).
var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

// splitDocuments splits a file into its YAML documents, as kubectl does,
// skipping empty ones (comments only, or a leading separator).
func splitDocuments(name string, data []byte) []document {
	parts := docSeparator.Split(string(data), -1)
	var docs []document
	for i, p := range parts {
		src := name
		if len(parts) > 1 {
			src = fmt.Sprintf("%s (document %d)", name, i+1)
		}
		docs = append(docs, document{source: src, data: []byte(p)})
	}
	return docs
}

// manifests are the recipe and the job of a run.
type manifests struct {
	recipe                  *v1alpha1.QuantRecipe
	job                     *v1alpha1.QuantJob
	recipeSource, jobSource string
}

// readManifests reads the files named by -f ("-" is stdin).
func readManifests(files []string, stdin func() ([]byte, error)) ([]document, error) {
	var docs []document
	for _, f := range files {
		var data []byte
		var err error
		if f == "-" {
			data, err = stdin()
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, usagef("reading %s: %w", f, err)
		}
		docs = append(docs, splitDocuments(f, data)...)
	}
	return docs, nil
}

// decodeManifests decodes exactly one QuantRecipe and one QuantJob from the
// documents, strictly (unknown and duplicate fields are errors naming the
// field, as kubectl's server-side field validation does), and validates
// them as the API server would. Every error is a usageError.
func decodeManifests(docs []document) (*manifests, error) {
	m := &manifests{}
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
		if want := v1alpha1.GroupVersion.String(); tm.APIVersion != want {
			return nil, usagef("%s: apiVersion %q is not %s", d.source, tm.APIVersion, want)
		}
		var obj any
		switch tm.Kind {
		case "QuantRecipe":
			if m.recipe != nil {
				return nil, usagef("%s: a second QuantRecipe (the first is in %s); give exactly one", d.source, m.recipeSource)
			}
			m.recipe, m.recipeSource = &v1alpha1.QuantRecipe{}, d.source
			obj = m.recipe
		case "QuantJob":
			if m.job != nil {
				return nil, usagef("%s: a second QuantJob (the first is in %s); give exactly one", d.source, m.jobSource)
			}
			m.job, m.jobSource = &v1alpha1.QuantJob{}, d.source
			obj = m.job
		default:
			return nil, usagef("%s: kind %q is not QuantRecipe or QuantJob", d.source, tm.Kind)
		}
		strict, err := sjson.UnmarshalStrict(j, obj, sjson.DisallowDuplicateFields, sjson.DisallowUnknownFields)
		if err != nil {
			return nil, usagef("%s: %w", d.source, err)
		}
		if len(strict) > 0 {
			msgs := make([]string, len(strict))
			for i, e := range strict {
				msgs[i] = e.Error()
			}
			return nil, usagef("%s: %s", d.source, strings.Join(msgs, "; "))
		}
	}
	switch {
	case m.recipe == nil && m.job == nil:
		return nil, usagef("no QuantRecipe and no QuantJob given; use -f RECIPE.yaml -f JOB.yaml")
	case m.recipe == nil:
		return nil, usagef("no QuantRecipe given; add -f RECIPE.yaml")
	case m.job == nil:
		return nil, usagef("no QuantJob given; add -f JOB.yaml")
	}
	if errs := validation.ValidateQuantRecipeSpec(&m.recipe.Spec, field.NewPath("spec")); len(errs) > 0 {
		return nil, usagef("%s: %w", m.recipeSource, errs.ToAggregate())
	}
	if l := m.job.Spec.Level; l != "" && l != v1alpha1.LevelQuick && l != v1alpha1.LevelStandard && l != v1alpha1.LevelExtended {
		return nil, usagef("%s: %v", m.jobSource, field.NotSupported(field.NewPath("spec", "level"), string(l), []string{"Quick", "Standard", "Extended"}))
	}
	// The recipe is valid by now, so what Spec.Validate finds is the job's.
	spec := m.spec()
	if err := spec.Validate(); err != nil {
		return nil, usagef("%s: %w", m.jobSource, err)
	}
	return m, nil
}

// spec is the run the manifests describe, with the API server's defaults
// and the level's presets filled in as the job controller would.
func (m *manifests) spec() bench.Spec {
	job := m.job.Spec
	w := *job.Workload.DeepCopy()
	if w.Operation == "" {
		w.Operation = v1alpha1.OperationQuantize
	}
	if w.InputDType == "" {
		w.InputDType = v1alpha1.DTypeBF16
	}
	if w.TensorRole == "" {
		w.TensorRole = v1alpha1.TensorRoleInput
	}
	if w.Usage == "" {
		w.Usage = v1alpha1.UsageBoth
	}
	if w.Distribution == "" {
		w.Distribution = v1alpha1.DistributionNormal
	}
	if w.Groups != nil && w.Groups.Splits == "" {
		w.Groups.Splits = v1alpha1.SplitUniform
	}
	mode := job.Mode
	if mode == "" {
		mode = v1alpha1.JobModeValidation
	}
	return bench.Spec{
		RecipeName: m.recipe.Name,
		RecipeKey:  m.recipe.Spec.Key(),
		Recipe:     m.recipe.Spec,
		Mode:       mode,
		Workload:   w,
		Execution:  v1alpha1.ExecutionForLevel(job.Level, job.Execution),
		Tolerances: job.Tolerances,
	}
}
