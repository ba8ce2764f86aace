package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kquant kind.
	GroupVersion = schema.GroupVersion{Group: "kquant.dev", Version: "v1alpha1"}

	// SchemeGroupVersion is GroupVersion under the name generated code
	// expects (the apply configurations' ForKind).
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers the kquant kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kquant kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
