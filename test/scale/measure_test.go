// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"strings"
	"testing"
	"time"
)

func TestWrites(t *testing.T) {
	metrics := `apiserver_request_total{code="201",component="apiserver",group="kquant.dev",resource="quantruns",scope="resource",subresource="",verb="POST",version="v1alpha1"} 800
apiserver_request_total{code="200",component="apiserver",group="kquant.dev",resource="quantruns",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 1600
apiserver_request_total{code="200",component="apiserver",group="kquant.dev",resource="quantruns",scope="resource",subresource="",verb="PATCH",version="v1alpha1"} 800
apiserver_request_total{code="200",component="apiserver",group="kquant.dev",resource="quantruns",scope="resource",subresource="",verb="GET",version="v1alpha1"} 5
apiserver_request_total{code="200",component="apiserver",group="kquant.dev",resource="quantruns",scope="cluster",subresource="",verb="WATCH",version="v1alpha1"} 3
apiserver_request_total{code="200",component="apiserver",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 200
apiserver_request_total{code="201",component="apiserver",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 2
apiserver_request_total{code="409",component="apiserver",group="kquant.dev",resource="quantruns",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 40
`
	stats, err := parseAPIStats(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		except []string
		want   float64
	}{
		{name: "every write", want: 800 + 1640 + 800 + 200 + 2},
		{name: "without Lease renewals", except: []string{"leases"}, want: 800 + 1640 + 800 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stats.Requests.Writes(tc.except...); got != tc.want {
				t.Errorf("Writes(%v) = %v, want %v", tc.except, got, tc.want)
			}
		})
	}
}

func TestWritesPerRunAndRefused(t *testing.T) {
	metrics := `apiserver_request_total{code="200",component="apiserver",group="kquant.dev",resource="quantruns",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 1600
apiserver_request_total{code="409",component="apiserver",group="kquant.dev",resource="quantruns",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 40
apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 800
apiserver_request_total{code="200",component="apiserver",group="kquant.dev",resource="quantruns",scope="resource",subresource="",verb="GET",version="v1alpha1"} 800
`
	stats, err := parseAPIStats(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(stats.Requests.WritesPer(800), ", "), "APPLY quantruns/status=2.050, POST pods/binding=1.000"; got != want {
		t.Errorf("WritesPer(800) = %q, want %q", got, want)
	}
	if got, want := strings.Join(stats.Refused.Top(5), ", "), "APPLY quantruns/status 409=40"; got != want {
		t.Errorf("Refused = %q, want %q", got, want)
	}
}

func TestManagerStats(t *testing.T) {
	scrape := func(reconciles, busy, queued, dequeued string) ManagerStats {
		t.Helper()
		s, err := parseManagerStats(strings.NewReader(`controller_runtime_max_concurrent_reconciles{controller="quantjob"} 16
controller_runtime_reconcile_total{controller="quantjob",result="success"} ` + reconciles + `
controller_runtime_reconcile_total{controller="quantjob",result="error"} 0
controller_runtime_reconcile_time_seconds_sum{controller="quantjob"} ` + busy + `
workqueue_queue_duration_seconds_sum{controller="quantjob",name="quantjob"} ` + queued + `
workqueue_queue_duration_seconds_count{controller="quantjob",name="quantjob"} ` + dequeued + `
`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before, after := scrape("100", "10", "1", "100"), scrape("30100", "650", "4001", "30100")
	got := after.Sub(before).Summary(40*time.Second, 10000, 3)
	want := []string{"quantjob: 3.0 reconciles per unit, 16.0 of 16 workers busy, 133ms mean queue wait"}
	if len(got) != 1 || got[0] != want[0] {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

func TestGauge(t *testing.T) {
	exposition := `# TYPE go_memstats_heap_alloc_bytes gauge
go_memstats_heap_alloc_bytes_total 5
go_memstats_heap_alloc_bytes 1.2345e+07
workqueue_depth{name="quantjob"} 3
`
	got, err := gauge(strings.NewReader(exposition), liveHeapMetric)
	if err != nil || got != 12345000 {
		t.Errorf("gauge = %d, %v; want 12345000", got, err)
	}
	if _, err := gauge(strings.NewReader(`workqueue_depth{name="quantjob"} 3`), liveHeapMetric); err == nil {
		t.Error("gauge found a metric the exposition does not have")
	}
}
