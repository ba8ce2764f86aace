// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package gateowners

import (
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
	return readRecord[Conditions](annotations, kquantv1alpha1.AnnotationGateConditions)
}

// Encode is c as the annotation's value; nil when c is empty (the annotation
// removed by a merge patch).
func (c Conditions) Encode() (*string, error) {
	return encodeRecord(c, kquantv1alpha1.AnnotationGateConditions)
}

// Types are c's condition types, sorted.
func (c Conditions) Types() []string { return slices.Sorted(maps.Keys(c)) }
