// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gateowners

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// Owner is one key's entry: the policy that holds the key and what it set.
type Owner struct {
	// Policy is the QuantGatePolicy's name.
	Policy string `json:"policy"`
	// Label is true when the policy set the key's label.
	Label bool `json:"label,omitempty"`
	// Taint is the effect of the taint the policy set; empty for none.
	Taint corev1.TaintEffect `json:"taint,omitempty"`
	// GPU and Run are the GPU UUID and the QuantRun whose failure set the gate.
	GPU string `json:"gpu,omitempty"`
	Run string `json:"run,omitempty"`
	// Since is when the gate was set.
	Since metav1.Time `json:"since"`
}

// Owners maps a gate key (gate.kquant.dev/<family>) to its owner.
type Owners map[string]Owner

// Of returns the owners recorded in annotations; a malformed record is an
// error, and the caller must then leave every gate key alone.
func Of(annotations map[string]string) (Owners, error) {
	return readRecord[Owners](annotations, kquantv1alpha1.AnnotationGateOwners)
}

// Encode is o as the annotation's value; nil when o is empty (the annotation
// removed by a merge patch).
func (o Owners) Encode() (*string, error) {
	return encodeRecord(o, kquantv1alpha1.AnnotationGateOwners)
}

// readRecord decodes the JSON map in annotation key; absent or empty is an
// empty record. Both of the package's records are such maps.
func readRecord[M ~map[string]V, V any](annotations map[string]string, key string) (M, error) {
	out := M{}
	v, ok := annotations[key]
	if !ok || v == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("reading annotation %s: %w", key, err)
	}
	return out, nil
}

// encodeRecord is m as annotation key's value, nil when m is empty.
// encoding/json sorts map keys, so equal records encode to equal values.
func encodeRecord[M ~map[string]V, V any](m M, key string) (*string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding annotation %s: %w", key, err)
	}
	s := string(b)
	return &s, nil
}

// Policies are the names of the policies that own a key or a Node condition
// in annotations, sorted and unique; a missing or malformed record names none.
func Policies(annotations map[string]string) []string {
	var out []string
	if o, err := Of(annotations); err == nil {
		for _, e := range o {
			out = append(out, e.Policy)
		}
	}
	if c, err := ConditionsOf(annotations); err == nil {
		out = slices.AppendSeq(out, maps.Values(c))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Keys are o's keys, sorted.
func (o Owners) Keys() []string { return slices.Sorted(maps.Keys(o)) }
