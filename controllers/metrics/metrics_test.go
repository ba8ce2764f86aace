// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kquantscheme "github.com/kquant/kquant/api/scheme"
	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/internal/gpulabels"
)

// A replica that does not lead exports none of the cluster's gauges, and one
// that leads exports them: with two replicas, a fleet-wide sum() must count
// every GPU once.
func TestGaugesOnlyFromTheLeader(t *testing.T) {
	for _, tc := range []struct {
		name    string
		elected bool
		want    bool
	}{
		{name: "standby replica", elected: false, want: false},
		{name: "leader", elected: true, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			elected := make(chan struct{})
			if tc.elected {
				close(elected)
			}
			s, err := kquantscheme.New()
			if err != nil {
				t.Fatal(err)
			}
			// The cache of an empty cluster, with the indexes the gauges read through.
			cache := fake.NewClientBuilder().WithScheme(s).
				WithIndex(&kquantv1alpha1.QuantRun{}, indexer.RunPhaseKey, indexer.RunPhase).
				WithIndex(&kquantv1alpha1.QuantJob{}, indexer.JobPhaseKey, indexer.JobPhase).
				Build()
			m := New(cache, elected, gpulabels.Default())
			ch := make(chan prometheus.Metric, 1024)
			gauges{m}.Collect(ch)
			close(ch)
			if got := len(ch) > 0; got != tc.want {
				t.Errorf("exported %d gauges, want some: %v", len(ch), tc.want)
			}
		})
	}
}
