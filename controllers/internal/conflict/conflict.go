// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package conflict

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// retryAfter is how soon a reconcile that lost a write race runs again.
const retryAfter = 20 * time.Millisecond

// Requeue turns conflicts into a quick, quiet retry: a run written
// by someone else between the cache read and the binding  is the normal race of optimistic concurrency, not a failure.
func Requeue(err error) (reconcile.Result, error) {
	if err == nil {
		return reconcile.Result{}, nil
	}
	var rest []error
	lost := false
	for _, e := range flatten(err) {
		if apierrors.IsConflict(e) {
			lost = true
		} else {
			rest = append(rest, e)
		}
	}
	if len(rest) > 0 {
		return reconcile.Result{}, errors.Join(rest...)
	}
	if lost {
		return reconcile.Result{RequeueAfter: retryAfter}, nil
	}
	return reconcile.Result{}, nil
}

// Result is a reconcile's result with its lost write races turned into quick,
// quiet retries (Requeue): res stands when err is nil.
func Result(res reconcile.Result, err error) (reconcile.Result, error) {
	if err != nil {
		return Requeue(err)
	}
	return res, nil
}

// flatten unwraps joined errors into their leaves.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}
