package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kquant kind.
	GroupVersion = schema.GroupVersion{Group: "kquant.dev", Version: "v1alpha1"}

	// SchemeGroupVersion is GroupVersion under the name generated code
	// expects (the apply configurations' ForKind).
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers the kquant kinds with a runtime.Scheme: every
	// kind and its list, in this one place (no init() per kind).
	SchemeBuilder = (&scheme.Builder{GroupVersion: GroupVersion}).Register(
		&QuantRecipe{}, &QuantRecipeList{},
		&ClusterQuantRecipe{}, &ClusterQuantRecipeList{},
		&QuantJob{}, &QuantJobList{},
		&QuantRun{}, &QuantRunList{},
		&QuantCronJob{}, &QuantCronJobList{},
		&GPUNodeProfile{}, &GPUNodeProfileList{},
	)

	// AddToScheme adds the kquant kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// The list kinds, one per kind above.

// QuantRecipeList is a list of QuantRecipes.
//
// +kubebuilder:object:root=true
type QuantRecipeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []QuantRecipe `json:"items"`
}

// ClusterQuantRecipeList is a list of ClusterQuantRecipes.
//
// +kubebuilder:object:root=true
type ClusterQuantRecipeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterQuantRecipe `json:"items"`
}

// QuantJobList is a list of QuantJobs.
//
// +kubebuilder:object:root=true
type QuantJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []QuantJob `json:"items"`
}

// QuantRunList is a list of QuantRuns.
//
// +kubebuilder:object:root=true
type QuantRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []QuantRun `json:"items"`
}

// QuantCronJobList is a list of QuantCronJobs.
//
// +kubebuilder:object:root=true
type QuantCronJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []QuantCronJob `json:"items"`
}

// GPUNodeProfileList is a list of GPUNodeProfiles.
//
// +kubebuilder:object:root=true
type GPUNodeProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GPUNodeProfile `json:"items"`
}
