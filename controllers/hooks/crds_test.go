// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package hooks_test

import (
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/controllers/hooks"
	"github.com/kquant/kquant/test/testenv"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.hooks.kquant.dev
spec:
  group: hooks.kquant.dev
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// ApplyCRDs applies the chart's CRDs (already installed: an upgrade in
// place) and a new one (a kind that a new chart version adds), and refuses
// anything but CRDs.
func TestApplyCRDs(t *testing.T) {
	ctx := t.Context()
	if err := hooks.ApplyCRDs(ctx, env.Client, filepath.Join(testenv.RepoRoot(), "charts/kquant/crds")); err != nil {
		t.Fatalf("applying the chart's CRDs: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "widgets.yaml"), []byte(widgetCRD), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := hooks.ApplyCRDs(ctx, env.Client, dir); err != nil {
		t.Fatalf("applying a new CRD: %v", err)
	}
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "widgets.hooks.kquant.dev"}, crd); err != nil {
		t.Fatalf("the new CRD: %v", err)
	}
	var managers []string
	for _, f := range crd.GetManagedFields() {
		managers = append(managers, f.Manager)
	}
	if len(managers) == 0 || managers[0] != hooks.FieldManagerCRDs {
		t.Errorf("field managers %v, want %s", managers, hooks.FieldManagerCRDs)
	}

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := hooks.ApplyCRDs(ctx, env.Client, bad); err == nil {
		t.Error("ApplyCRDs applied a ConfigMap")
	}
	if err := hooks.ApplyCRDs(ctx, env.Client, t.TempDir()); err == nil {
		t.Error("ApplyCRDs succeeded on an empty directory")
	}
}
