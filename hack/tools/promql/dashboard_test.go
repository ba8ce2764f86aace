// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package promql

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
)

// dashboardFile is the chart's Grafana dashboard.
var dashboardFile = filepath.Join("..", "..", "..", "charts", "kquant", "files", "grafana", "kquant-dashboard.json")

// variable is one of the dashboard's template variables.
type variable struct{ Name, Type string }

// grafanaExpr is expr as Grafana sends it with every variable at All (".*")
// and the time range one day: the built-ins $__range_s and $__range, which
// make the panels follow the dashboard's time range, become their values.
func (d dashboard) grafanaExpr(expr string) string {
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			expr = strings.ReplaceAll(expr, `"$`+v.Name+`"`, `".*"`)
		}
	}
	return strings.NewReplacer("$__range_s", "86400", "$__rate_interval", "5m", "$__range", "1d").Replace(expr)
}

// Every query of the chart's Grafana dashboard is PromQL that Prometheus
// parses, and none reads a recording rule: the dashboard works with the
// PrometheusRule off.
func TestDashboardQueriesParse(t *testing.T) {
	d := readDashboard(t)
	records, _ := rules(t)
	p := parser.NewParser(promqltest.TestParserOpts)
	n := 0
	for _, panel := range d.Panels {
		for _, target := range panel.Targets {
			n++
			if _, err := p.ParseExpr(d.grafanaExpr(target.Expr)); err != nil {
				t.Errorf("panel %q: %q: %v", panel.Title, target.Expr, err)
			}
			for name := range records {
				if strings.Contains(target.Expr, name) {
					t.Errorf("panel %q reads the recording rule %s: it shows nothing with the rules off", panel.Title, name)
				}
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s has no queries", dashboardFile)
	}
	for _, want := range []string{"node", "model", "recipe", "job"} {
		found := false
		for _, v := range d.Templating.List {
			found = found || v.Name == want
		}
		if !found {
			t.Errorf("%s has no variable %q", dashboardFile, want)
		}
	}
}

// The dashboard's outlier count agrees with the alert on TestRules' fleet,
// from the raw series alone: one outlier (GPU f).
func TestDashboardOutliersWithoutRules(t *testing.T) {
	d := readDashboard(t)
	gpus := []any{
		gpu("n1", "GPU-a", "0", "H100"), gpu("n1", "GPU-b", "1", "H100"), gpu("n2", "GPU-c", "0", "H100"),
		gpu("n3", "GPU-d", "0", "H100"), gpu("n3", "GPU-e", "1", "H100"), gpu("n3", "GPU-f", "2", "H100"),
		gpu("n4", "GPU-g", "0", "B200"), gpu("n4", "GPU-h", "1", "B200"), gpu("n4", "GPU-i", "2", "B200"),
	}
	script := fmt.Sprintf(series, gpus...)
	found := false
	for _, panel := range d.Panels {
		if panel.Title != "Bandwidth outliers" {
			continue
		}
		found = true
		script += evalAt("8d", d.grafanaExpr(panel.Targets[0].Expr), nil, `{} 1`)
	}
	if !found {
		t.Fatalf("%s has no panel \"Bandwidth outliers\"", dashboardFile)
	}
	promqltest.RunTest(t, script, promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery))
}
