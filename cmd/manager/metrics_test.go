// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kquant/kquant/test/testenv"
)

// scraperToken is a token of a new service account default/prometheus.
func scraperToken(t *testing.T, env *testenv.Env) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: "default"}}
	if err := env.Client.Create(t.Context(), sa); err != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := env.Client.SubResource("token").Create(t.Context(), sa, tr); err != nil {
		t.Fatalf("requesting a token: %v", err)
	}
	return tr.Status.Token
}

// checkSecureMetrics scrapes addr over HTTPS: refused without a token (401),
// refused to default/prometheus without RBAC (403), served once it may GET
// /metrics.
func checkSecureMetrics(t *testing.T, env *testenv.Env, addr, token string) {
	t.Helper()
	ctx := t.Context()
	// The certificate is self-signed, as it is in the chart's default.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a self-signed test server
	scrape := func(bearer string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s/metrics", addr), nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor := func(what, bearer string, ok func(int, string) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body := scrape(bearer)
			if ok(code, body) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last %d %.200s", what, code, body)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitFor("anonymous scrape refused", "", func(code int, _ string) bool { return code == http.StatusUnauthorized })
	waitFor("unauthorized service account refused", token, func(code int, _ string) bool { return code == http.StatusForbidden })
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kquant-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-kquant-metrics"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: "default"}}}
	if err := env.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	waitFor("authorized scrape served", token, func(code int, body string) bool {
		return code == http.StatusOK && strings.Contains(body, "kquant_runs_pending") && strings.Contains(body, "kquant_jobs_unschedulable")
	})
}
