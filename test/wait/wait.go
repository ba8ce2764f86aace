// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package wait is how kquant's end-to-end tests wait for the cluster to reach
// a state: poll a condition until it holds or a timeout passes, and the most
// common condition, a QuantJob reaching a phase. The envtest, process-based
// (test/e2e) and real-cluster (test/cluster) suites share it, so a timeout
// message reads the same everywhere.
package wait

import (
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
)

// interval is how often For polls: often enough for seconds-long scenarios,
// rarely enough not to load a small machine's API server.
const interval = 250 * time.Millisecond

// For polls f until it returns nil, and fails the test with f's last error
// when timeout passes first.
func For(t testing.TB, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(interval)
	}
}

// JobPhase waits until the QuantJob ns/name reaches phase and returns it; the
// failure message gives the job's counts.
func JobPhase(t testing.TB, c client.Client, ns, name string, phase v1alpha1.JobPhase, timeout time.Duration) *v1alpha1.QuantJob {
	t.Helper()
	job := &v1alpha1.QuantJob{}
	For(t, timeout, "job "+name+" "+string(phase), func() error {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, job); err != nil {
			return err
		}
		if job.Status.Phase != phase {
			return fmt.Errorf("phase %q, %d/%d succeeded, %d running, %d pending, %d failed",
				job.Status.Phase, job.Status.Succeeded, job.Status.Total, job.Status.Running, job.Status.Pending, job.Status.Failed)
		}
		return nil
	})
	return job
}
