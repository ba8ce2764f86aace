// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package chart

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// TestChartConfinesAgentToItsNode installs the chart for real and acts as its
// agent's service account on node-a (the node name in the token's extra info,
// as the API server sets it for a pod's bound token): the chart's RBAC and
// admission policy together let it write its own node's objects and nothing
// else. Writes are server-side dry-runs, which go through admission.
func TestChartConfinesAgentToItsNode(t *testing.T) {
	manifests, _ := render(t, "live", "live")
	if _, err := tl.kubectlCmd(manifests, "apply", "--server-side", "--field-manager=kquant-chart-test", "-f", "-"); err != nil {
		t.Fatalf("installing the chart: %v", err)
	}
	cfg := rest.CopyConfig(tl.env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:live:live-kquant-agent",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:live", "system:authenticated"},
		Extra:    map[string][]string{"authentication.kubernetes.io/node-name": {"node-a"}},
	}
	agent, err := client.New(cfg, client.Options{Scheme: tl.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	profile := func(name string) client.Object {
		return &kquantv1alpha1.GPUNodeProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	lease := func(name string) client.Object {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "live"}}
	}
	for _, tc := range []struct {
		name    string
		obj     client.Object
		wantErr string // "" when allowed
	}{
		{"own GPUNodeProfile", profile("node-a"), ""},
		{"another node's GPUNodeProfile", profile("node-b"), "may write only GPUNodeProfile node-a"},
		{"own Lease", lease("kquant-agent-node-a"), ""},
		{"another node's Lease", lease("kquant-agent-node-b"), "may write only Lease kquant-agent-node-a"},
		{"a QuantRecipe", &kquantv1alpha1.QuantRecipe{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "live"}, Spec: kquantv1alpha1.QuantRecipeSpec{Scheme: "Float8CurrentScaling"}}, "forbidden"},
		{"a Node", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}}, "forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The policy takes effect a moment after it is created.
			deadline := time.Now().Add(15 * time.Second)
			for {
				err := agent.Create(context.Background(), tc.obj.DeepCopyObject().(client.Object), client.DryRunAll)
				switch {
				case tc.wantErr == "" && err == nil:
					return
				case tc.wantErr != "" && err != nil && apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
					if !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("refused with %v, want a message containing %q", err, tc.wantErr)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("create as the agent of node-a: got %v, want error containing %q", err, tc.wantErr)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}
