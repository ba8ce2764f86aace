// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterQuantRecipe is a QuantRecipe for the whole cluster: the catalog that
// the chart installs (TransformerEngine's recipes with their defaults), which
// a QuantJob in any namespace references with recipeRef.kind
// ClusterQuantRecipe, as a PersistentVolumeClaim references a StorageClass.
// Its spec, admission rules and status are a QuantRecipe's.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cqr,categories=kquant
// +kubebuilder:printcolumn:name="Scheme",type=string,JSONPath=`.spec.scheme`
// +kubebuilder:printcolumn:name="Format",type=string,JSONPath=`.status.format`
// +kubebuilder:printcolumn:name="Native",type=integer,JSONPath=`.status.nodes.native`
// +kubebuilder:printcolumn:name="Emulated",type=integer,JSONPath=`.status.nodes.emulated`
// +kubebuilder:printcolumn:name="Key",type=string,JSONPath=`.status.key`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterQuantRecipe struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec describes the recipe.
	// +required
	Spec QuantRecipeSpec `json:"spec"`

	// status is written by the controller.
	// +optional
	Status QuantRecipeStatus `json:"status,omitempty"`
}
