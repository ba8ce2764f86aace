// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package quantjob

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/api/v1alpha1/estimate"
)

// setReferenceBackend sets the ReferenceBackend condition of a Benchmark job
// whose bound runs are all on nodes with only the reference backend, with the
// estimated time of one run, and removes it otherwise. A job with no bound
// run yet keeps what it had: where it runs is not known.
func (r *Reconciler) setReferenceBackend(ctx context.Context, job *kquantv1alpha1.QuantJob, runs []kquantv1alpha1.QuantRun, st *kquantv1alpha1.QuantJobStatus) error {
	if job.Spec.Mode != kquantv1alpha1.JobModeBenchmark {
		meta.RemoveStatusCondition(&st.Conditions, kquantv1alpha1.JobConditionReferenceBackend)
		return nil
	}
	var nodes []string
	for i := range runs {
		if n := runs[i].Spec.NodeName; n != "" && !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return nil
	}
	for _, n := range nodes {
		profile := &kquantv1alpha1.GPUNodeProfile{}
		if err := r.client.Get(ctx, client.ObjectKey{Name: n}, profile); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("getting GPUNodeProfile %s: %w", n, err)
			}
			meta.RemoveStatusCondition(&st.Conditions, kquantv1alpha1.JobConditionReferenceBackend)
			return nil
		}
		if profile.Status.Backend != kquantv1alpha1.BackendReference {
			meta.RemoveStatusCondition(&st.Conditions, kquantv1alpha1.JobConditionReferenceBackend)
			return nil
		}
	}
	slices.Sort(nodes)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: kquantv1alpha1.JobConditionReferenceBackend, Status: metav1.ConditionTrue,
		Reason: kquantv1alpha1.ReasonReferenceBackendOnly, ObservedGeneration: job.Generation,
		Message: referenceBackendMessage(job, nodes),
	})
	return nil
}

// referenceBackendMessage says where the job runs, what that means for its
// numbers and how long one run takes there.
func referenceBackendMessage(job *kquantv1alpha1.QuantJob, nodes []string) string {
	per := estimate.ReferenceRun(job.Spec.Workload, kquantv1alpha1.ExecutionForLevel(job.Spec.Level, job.Spec.Execution))
	where := strings.Join(nodes, ", ")
	if len(nodes) > 3 {
		where = fmt.Sprintf("%s and %d more", strings.Join(nodes[:3], ", "), len(nodes)-3)
	}
	return fmt.Sprintf("the nodes of its runs (%s) have only the pure-Go reference backend (no CUDA driver): "+
		"its timings are CPU time, not GPU figures, and one run takes about %s of CPU time there, "+
		"runs on one node sharing its cores", where, formatEstimate(per))
}

// formatEstimate keeps the precision an estimate has: 1s, 1m, 9m50s, 2h10m.
func formatEstimate(d time.Duration) string {
	switch {
	case d < time.Second:
		return "1s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		d = d.Round(10 * time.Second)
	default:
		d = d.Round(time.Minute)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
