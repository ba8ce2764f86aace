// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package baseline

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kquant/kquant/api/v1alpha1"
)

func TestMeasurementAPI(t *testing.T) {
	cases := []struct {
		name string
		in   *Measurement
		want *v1alpha1.Baselines
	}{
		{name: "nil measures nothing", in: nil, want: nil},
		{name: "zero measures nothing", in: &Measurement{}, want: nil},
		{
			name: "all fields",
			in:   &Measurement{Launch: 2340 * time.Nanosecond, GraphLaunch: 1500 * time.Nanosecond, CopyBandwidthGBps: 2876.44},
			want: &v1alpha1.Baselines{LaunchMicros: "2.34", GraphLaunchMicros: "1.50", CopyBandwidthGBps: "2876.4"},
		},
		{
			name: "bandwidths only",
			in:   &Measurement{CopyBandwidthGBps: 4100, PeakBandwidthGBps: 4915.2},
			want: &v1alpha1.Baselines{CopyBandwidthGBps: "4100.0", PeakBandwidthGBps: "4915.2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.API()); diff != "" {
				t.Errorf("API() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNullIsReferenceWithoutBaselines(t *testing.T) {
	var p Prober = Null{}
	if p.Backend() != v1alpha1.BackendReference {
		t.Errorf("backend %s, want reference", p.Backend())
	}
	m, err := p.Measure(context.Background(), 0)
	if m != nil || err != nil {
		t.Errorf("Measure = %v, %v; want nil, nil", m, err)
	}
}
