// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestEveryKindAndListIsRegisteredUnderItsName(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for want, obj := range map[string]runtime.Object{
		"QuantRecipe": &QuantRecipe{}, "QuantRecipeList": &QuantRecipeList{},
		"ClusterQuantRecipe": &ClusterQuantRecipe{}, "ClusterQuantRecipeList": &ClusterQuantRecipeList{},
		"QuantJob": &QuantJob{}, "QuantJobList": &QuantJobList{},
		"QuantRun": &QuantRun{}, "QuantRunList": &QuantRunList{},
		"QuantCronJob": &QuantCronJob{}, "QuantCronJobList": &QuantCronJobList{},
		"QuantGatePolicy": &QuantGatePolicy{}, "QuantGatePolicyList": &QuantGatePolicyList{},
		"GPUNodeProfile": &GPUNodeProfile{}, "GPUNodeProfileList": &GPUNodeProfileList{},
	} {
		gvks, _, err := s.ObjectKinds(obj)
		if err != nil {
			t.Errorf("%s: %v", want, err)
			continue
		}
		if len(gvks) != 1 || gvks[0] != GroupVersion.WithKind(want) {
			t.Errorf("%T is registered as %v, want %s", obj, gvks, want)
		}
		if got, err := s.New(GroupVersion.WithKind(want)); err != nil || cmp.Diff(obj, got) != "" {
			t.Errorf("scheme.New(%s) = %T, %v", want, got, err)
		}
	}
}

func TestListDeepCopyCopiesTheItems(t *testing.T) {
	in := &QuantRunList{
		ListMeta: metav1.ListMeta{ResourceVersion: "7"},
		Items:    []QuantRun{{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"}}}},
	}
	out, ok := in.DeepCopyObject().(*QuantRunList)
	if !ok {
		t.Fatalf("DeepCopyObject returned %T", in.DeepCopyObject())
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Fatalf("copy differs (-in +out):\n%s", diff)
	}
	out.Items[0].Labels["k"] = "changed"
	if in.Items[0].Labels["k"] != "v" {
		t.Error("the copy shares its items' maps with the original")
	}
	if (*QuantRunList)(nil).DeepCopy() != nil {
		t.Error("DeepCopy of nil is not nil")
	}
}
