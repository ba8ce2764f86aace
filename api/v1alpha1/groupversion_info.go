// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kquant kind.
	GroupVersion = schema.GroupVersion{Group: "kquant.dev", Version: "v1alpha1"}

	// SchemeGroupVersion is GroupVersion under the name generated code
	// expects (the apply configurations' ForKind).
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers the kquant kinds with a runtime.Scheme, each
	// with its list, in this one place (no init() per kind).
	SchemeBuilder = register(
		kind[QuantRecipe],
		kind[ClusterQuantRecipe],
		kind[QuantJob],
		kind[QuantRun],
		kind[QuantCronJob],
		kind[QuantGatePolicy],
		kind[GPUNodeProfile],
	)

	// AddToScheme adds the kquant kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// register returns a scheme builder of the kinds.
func register(kinds ...func(*runtime.Scheme)) *scheme.Builder {
	b := &scheme.Builder{GroupVersion: GroupVersion}
	b.SchemeBuilder.Register(func(s *runtime.Scheme) error {
		for _, add := range kinds {
			add(s)
		}
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})
	return b
}

// kind adds the kind T under its Go name and List[T] under that name with
// List appended (a List's own Go name is not a kind's).
func kind[T any, P interface {
	*T
	runtime.Object
}](s *runtime.Scheme) {
	name := reflect.TypeFor[T]().Name()
	s.AddKnownTypeWithName(GroupVersion.WithKind(name), P(new(T)))
	s.AddKnownTypeWithName(GroupVersion.WithKind(name+"List"), &List[T]{})
}

// List is a list of one kind's objects: every kquant list kind
// (QuantRecipeList, QuantRunList, …) is this type, registered under its
// kind's name with List appended.
//
// +kubebuilder:object:generate=false
// +kubebuilder:ac:generate=false
type List[T any] struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []T `json:"items"`
}

// The list kinds.
type (
	QuantRecipeList        = List[QuantRecipe]
	ClusterQuantRecipeList = List[ClusterQuantRecipe]
	QuantJobList           = List[QuantJob]
	QuantRunList           = List[QuantRun]
	QuantCronJobList       = List[QuantCronJob]
	QuantGatePolicyList    = List[QuantGatePolicy]
	GPUNodeProfileList     = List[GPUNodeProfile]
)

// DeepCopyInto copies in into out; T is a kind, whose pointer has the
// generated DeepCopyInto.
func (in *List[T]) DeepCopyInto(out *List[T]) {
	*out = *in
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]T, len(in.Items))
		for i := range in.Items {
			any(&in.Items[i]).(interface{ DeepCopyInto(*T) }).DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of in; nil for nil.
func (in *List[T]) DeepCopy() *List[T] {
	if in == nil {
		return nil
	}
	out := new(List[T])
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject is DeepCopy as a runtime.Object.
func (in *List[T]) DeepCopyObject() runtime.Object {
	if c := in.DeepCopy(); c != nil {
		return c
	}
	return nil
}
