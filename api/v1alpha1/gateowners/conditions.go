// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gateowners

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// Conditions maps a Node condition type (kquant.dev/<Family>Validated) to the
// QuantGatePolicy that set it: the record in annotation
// kquant.dev/gate-conditions. A condition of that type without an entry is
// someone else's, and no policy writes or removes it.
type Conditions map[string]string

// ConditionsOf returns the condition record in annotations; a malformed
// record is an error, and the caller must then leave every condition alone.
func ConditionsOf(annotations map[string]string) (Conditions, error) {
	v, ok := annotations[kquantv1alpha1.AnnotationGateConditions]
	if !ok || v == "" {
		return Conditions{}, nil
	}
	out := Conditions{}
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("reading annotation %s: %w", kquantv1alpha1.AnnotationGateConditions, err)
	}
	return out, nil
}

// Encode is c as the annotation's value; nil when c is empty (the annotation
// removed by a merge patch).
func (c Conditions) Encode() (*string, error) {
	if len(c) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(c) // sorted keys: a stable value
	if err != nil {
		return nil, fmt.Errorf("encoding annotation %s: %w", kquantv1alpha1.AnnotationGateConditions, err)
	}
	s := string(b)
	return &s, nil
}

// Types are c's condition types, sorted.
func (c Conditions) Types() []string { return slices.Sorted(maps.Keys(c)) }
