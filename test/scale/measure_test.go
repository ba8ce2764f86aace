package scale

import (
	"strings"
	"testing"
)

func TestWrites(t *testing.T) {
	metrics := `apiserver_request_total{code="201",component="apiserver",group="kquant.dev",resource="quantruns",scope="resource",subresource="",verb="POST",version="v1alpha1"} 800
apiserver_request_total{code="200",component="apiserver",group="kquant.dev",resource="quantruns",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 1600
apiserver_request_total{code="200",component="apiserver",group="kquant.dev",resource="quantruns",scope="resource",subresource="",verb="PATCH",version="v1alpha1"} 800
apiserver_request_total{code="200",component="apiserver",group="kquant.dev",resource="quantruns",scope="resource",subresource="",verb="GET",version="v1alpha1"} 5
apiserver_request_total{code="200",component="apiserver",group="kquant.dev",resource="quantruns",scope="cluster",subresource="",verb="WATCH",version="v1alpha1"} 3
apiserver_request_total{code="200",component="apiserver",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 200
apiserver_request_total{code="201",component="apiserver",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 2
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
		{name: "every write", want: 800 + 1600 + 800 + 200 + 2},
		{name: "without Lease renewals", except: []string{"leases"}, want: 800 + 1600 + 800 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stats.Requests.Writes(tc.except...); got != tc.want {
				t.Errorf("Writes(%v) = %v, want %v", tc.except, got, tc.want)
			}
		})
	}
}
