// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package conflict

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestRequeue(t *testing.T) {
	conflict := fmt.Errorf("binding run r: %w", apierrors.NewConflict(schema.GroupResource{Resource: "quantruns"}, "r", errors.New("modified")))
	other := errors.New("boom")
	cases := map[string]struct {
		err         error
		wantErr     bool
		wantRequeue bool
	}{
		"no error":             {},
		"only conflicts":       {err: errors.Join(nil, conflict, conflict), wantRequeue: true},
		"a real error remains": {err: errors.Join(conflict, other), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := Requeue(tc.err)
			if (err != nil) != tc.wantErr || (res.RequeueAfter > 0) != tc.wantRequeue {
				t.Errorf("Requeue() = %+v, %v; want error %v, requeue %v", res, err, tc.wantErr, tc.wantRequeue)
			}
		})
	}
}

func TestResult(t *testing.T) {
	want := reconcile.Result{RequeueAfter: time.Minute}
	if res, err := Result(want, nil); err != nil || res != want {
		t.Errorf("Result(res, nil) = %v, %v; want the result unchanged", res, err)
	}
	conflictErr := apierrors.NewConflict(schema.GroupResource{Resource: "quantruns"}, "r", errors.New("changed"))
	if res, err := Result(want, conflictErr); err != nil || res.RequeueAfter != retryAfter {
		t.Errorf("Result(res, conflict) = %v, %v; want a quiet retry", res, err)
	}
}
