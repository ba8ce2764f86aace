// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package promql

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
)

// Every query of the chart's Grafana dashboard is PromQL that Prometheus parses.
func TestDashboardQueriesParse(t *testing.T) {
	path := filepath.Join("..", "..", "..", "charts", "kquant", "files", "grafana", "kquant-dashboard.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	p := parser.NewParser(promqltest.TestParserOpts)
	n := 0
	for _, panel := range dash.Panels {
		for _, target := range panel.Targets {
			n++
			if _, err := p.ParseExpr(target.Expr); err != nil {
				t.Errorf("panel %q: %q: %v", panel.Title, target.Expr, err)
			}
		}
	}
	if n == 0 {
		t.Fatalf("%s has no queries", path)
	}
}
