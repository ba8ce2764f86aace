// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package policy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/test/testenv"
)

// admissionCase is one write and whether the API server must allow it, or
// refuse it with a message containing wantMsg.
type admissionCase struct {
	name      string
	do        func() error
	wantAllow bool
	wantMsg   string
}

func checkAdmission(t *testing.T, cases []admissionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if tc.wantAllow {
				if err != nil {
					t.Fatalf("want allowed, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want refused with %q, was allowed", tc.wantMsg)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("refusal %q does not say %q", err, tc.wantMsg)
			}
		})
	}
}

// createPolicy creates the ValidatingAdmissionPolicy and its binding from
// config/policy/<file>.
func createPolicy(ctx context.Context, t *testing.T, file string) {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.RepoRoot(), "config", "policy", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for _, obj := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}} {
		if err := dec.Decode(obj); err != nil {
			t.Fatalf("decoding policy manifest: %v", err)
		}
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
}

// waitForRefusal waits until a policy refuses write: policies take effect a
// moment after they are created. A refusal by the authorizer does not
// count: RBAC that a test has just granted takes a moment too, and until
// then it refuses what the policy would (the API server names the policy
// that refused). undo removes what an allowed write made.
func waitForRefusal(t *testing.T, what string, write func() error, undo func()) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := write()
		if (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy") {
			return
		}
		if err == nil && undo != nil {
			undo()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy never refused %s (last error %v)", what, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitForAllow waits until write is allowed: a deleted policy stops being
// enforced a moment after.
func waitForAllow(t *testing.T, what string, write func() error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := write()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never allowed %s (last error %v)", what, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
