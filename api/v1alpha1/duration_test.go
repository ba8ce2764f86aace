// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func TestSecondsAtTheBounds(t *testing.T) {
	year := 366 * 24 * time.Hour
	tests := []struct {
		name string
		in   int64
		want time.Duration
	}{
		{name: "zero", in: 0, want: 0},
		{name: "one", in: 1, want: time.Second},
		{name: "the maximum", in: MaxDurationSeconds, want: year},
		{name: "past the maximum: clamped", in: MaxDurationSeconds + 1, want: year},
		{name: "what overflowed time.Duration", in: 10_000_000_000, want: year},
		{name: "the largest int64", in: math.MaxInt64, want: year},
		{name: "negative: clamped to zero", in: -1, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Seconds(tt.in); got != tt.want {
				t.Errorf("Seconds(%d) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
	if got := Seconds(int32(math.MaxInt32)); got != year {
		t.Errorf("Seconds(MaxInt32) = %v, want %v", got, year)
	}
	// The arithmetic the controllers do with the largest durations, from the
	// latest time a Kubernetes timestamp holds: deadlines land after their
	// start, and the time left until them is what was added.
	latest := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	for _, start := range []time.Time{time.Unix(0, 0), time.Now(), latest} {
		end := start.Add(Seconds(int64(MaxDurationSeconds)))
		if !end.After(start) || end.Sub(start) != year {
			t.Errorf("%v + the maximum = %v: the arithmetic overflowed", start, end)
		}
		if sum := Seconds(int64(MaxDurationSeconds)) + Seconds(int64(MaxDurationSeconds)); sum != 2*year {
			t.Errorf("the sum of two maxima overflowed: %v", sum)
		}
	}
}

// TestEverySecondsFieldIsBounded holds every field of every CRD whose name
// counts seconds to at most MaxDurationSeconds, and status.active of QuantCronJob to
// MaxActiveJobs: the markers spell the numbers that these constants own.
func TestEverySecondsFieldIsBounded(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs found: %v", err)
	}
	seen := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, v := range crd.Spec.Versions {
			walkSchema(v.Schema.OpenAPIV3Schema, crd.Spec.Names.Kind, func(path string, s *apiextensionsv1.JSONSchemaProps) {
				switch {
				case strings.Contains(strings.ToLower(path[strings.LastIndex(path, ".")+1:]), "seconds"):
					seen++
					// A kind may bound a field tighter (a gate policy's
					// validation deadline is at most 7 days); never looser.
					if s.Maximum == nil {
						t.Errorf("%s: no maximum, want at most MaxDurationSeconds (%d)", path, MaxDurationSeconds)
					} else if *s.Maximum > MaxDurationSeconds {
						t.Errorf("%s: maximum %v, want at most MaxDurationSeconds (%d)", path, *s.Maximum, MaxDurationSeconds)
					}
				case path == "QuantCronJob.status.active":
					if s.MaxItems == nil || *s.MaxItems != MaxActiveJobs {
						t.Errorf("%s: maxItems %v, want MaxActiveJobs (%d)", path, s.MaxItems, MaxActiveJobs)
					}
				}
			})
		}
	}
	if seen == 0 {
		t.Error("no seconds field found: the walk is broken")
	}
}

func walkSchema(s *apiextensionsv1.JSONSchemaProps, path string, visit func(string, *apiextensionsv1.JSONSchemaProps)) {
	if s == nil {
		return
	}
	visit(path, s)
	for name, p := range s.Properties {
		walkSchema(&p, path+"."+name, visit)
	}
	if s.Items != nil {
		walkSchema(s.Items.Schema, path+"[]", visit)
	}
}
