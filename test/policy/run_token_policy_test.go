// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/controllers/execution"
)

// TestOnlyKubeletsMintRunTokens: a token of the run ServiceAccount comes
// only from a kubelet, whatever RBAC grants anyone else (the built-in edit
// role lets a namespace editor request tokens for its namespace's
// ServiceAccounts); tokens of other ServiceAccounts are not the policy's
// concern.
func TestOnlyKubeletsMintRunTokens(t *testing.T) {
	ctx := context.Background()
	createPolicy(ctx, t, "run-token-restriction.yaml")
	ns, err := env.CreateNamespace(ctx, "runtoken")
	if err != nil {
		t.Fatal(err)
	}
	const minters, appSA = "token-minters", "app"
	runSA := execution.DefaultServiceAccountName
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: runSA, Namespace: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: appSA, Namespace: ns}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "test-mint-tokens"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "test-mint-tokens"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "test-mint-tokens"},
			Subjects: []rbacv1.Subject{
				{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: minters},
				{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:nodes"},
			},
		},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
	as := func(user string, groups ...string) kubernetes.Interface {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
		return kubernetes.NewForConfigOrDie(cfg)
	}
	mint := func(c kubernetes.Interface, sa string) func() error {
		return func() error {
			req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
			_, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, req, metav1.CreateOptions{})
			return err
		}
	}
	kubelet := as("system:node:node-a", "system:nodes")
	editor := as("alice", minters)

	waitForRefusal(t, "an editor's token for "+runSA, mint(editor, runSA), nil)

	const refused = "only the kubelet may request tokens for the ServiceAccount kquant-run"
	checkAdmission(t, []admissionCase{
		{"a kubelet's token for the run ServiceAccount", mint(kubelet, runSA), true, ""},
		{"a namespace editor's token for the run ServiceAccount", mint(editor, runSA), false, refused},
		{"the manager's token for the run ServiceAccount", mint(as("system:serviceaccount:kquant-system:kquant-manager", "system:serviceaccounts", minters), runSA), false, refused},
		{"a user named like a kubelet, outside system:nodes", mint(as("system:node:node-a", minters), runSA), false, refused},
		{"a namespace editor's token for another ServiceAccount", mint(editor, appSA), true, ""},
	})
}
