// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kquant/kquant/test/testenv"
)

// The manager starts against a real API server with leader election, becomes
// ready, and serves kquant's metrics securely (metricsSecure, the default):
// HTTPS, and only to scrapers the API server authenticates and authorizes
// for GET /metrics. (Plain HTTP, --metrics-secure=false, is what test/e2e
// scrapes.)
func TestManagerStartsAndServesProbesAndMetrics(t *testing.T) {
	env := testenv.ForTest(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kquant-test"}}); err != nil {
		t.Fatal(err)
	}
	f := flags{kubeconfig: kubeconfig, leaderElect: true, metricsAddr: testenv.FreeLocalAddr(t), metricsSecure: true, probeAddr: testenv.FreeLocalAddr(t), leaseNamespace: "kquant-test"}
	token := scraperToken(t, env)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- runManager(ctx, f) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := get(fmt.Sprintf("http://%s/readyz", f.probeAddr))
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after 30s: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, _ := get(fmt.Sprintf("http://%s/healthz", f.probeAddr)); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	checkSecureMetrics(t, env, f.metricsAddr, token)
}
