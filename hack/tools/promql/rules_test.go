// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package promql

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
)

// rulesFile is the chart's rule file, the one source of kquant's rules.
var rulesFile = filepath.Join("..", "..", "..", "charts", "kquant", "files", "prometheus", "rules.yaml")

// rules parses the rule file as Prometheus loads one (promtool check rules):
// recording rules by record name, alerts by alert name.
func rules(t *testing.T) (records, alerts map[string]string) {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, parser.NewParser(promqltest.TestParserOpts), slog.Default())
	if len(errs) > 0 {
		t.Fatalf("Prometheus refuses %s: %v", rulesFile, errs)
	}
	records, alerts = map[string]string{}, map[string]string{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				records[r.Record] = r.Expr
			} else {
				alerts[r.Alert] = r.Expr
			}
		}
	}
	return records, alerts
}

// inline replaces each recording rule's name in expr by its expression, so
// that one instant query evaluates what Prometheus would after the rules ran.
func inline(expr string, records map[string]string) string {
	for range records { // at most one level per record
		changed := false
		for name, rexpr := range records {
			if strings.Contains(expr, name) {
				expr = strings.ReplaceAll(expr, name, "("+strings.TrimSpace(rexpr)+")")
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	return expr
}

// gpu is the dcgm-exporter labels of a test GPU.
func gpu(host, uuid, index, model string) string {
	return fmt.Sprintf(`Hostname=%q, UUID=%q, gpu=%q, modelName=%q`, host, uuid, index, model)
}

// The fleet at 8 days: node n1 has two H100s (a passed validation half a
// day ago; b failed validation, last passed 8 days ago), node n2 one H100
// (c) that never passed; a Benchmark job ran on six H100s, one of them slow,
// and on three B200s, too few to judge.
const series = `
load 1d
  kquant_gpu_info{%[1]s, computeCapability="9.0", driverVersion="580"} 1+0x8
  kquant_gpu_info{%[2]s, computeCapability="9.0", driverVersion="580"} 1+0x8
  kquant_gpu_info{%[3]s, computeCapability="9.0", driverVersion="580"} 1+0x8
  kquant_gpu_last_success_timestamp_seconds{%[1]s, recipe="fp8", scheme="Float8CurrentScaling"} 648000+0x8
  kquant_gpu_last_success_timestamp_seconds{%[2]s, recipe="fp8", scheme="Float8CurrentScaling"} 0+0x8
  kquant_gpu_verdict{%[1]s, quantjob="ns/v", recipe="fp8", scheme="Float8CurrentScaling", mode="Validation", verdict="Pass"} 1+0x8
  kquant_gpu_verdict{%[1]s, quantjob="ns/v", recipe="fp8", scheme="Float8CurrentScaling", mode="Validation", verdict="Fail"} 0+0x8
  kquant_gpu_verdict{%[2]s, quantjob="ns/v", recipe="fp8", scheme="Float8CurrentScaling", mode="Validation", verdict="Pass"} 0+0x8
  kquant_gpu_verdict{%[2]s, quantjob="ns/v", recipe="fp8", scheme="Float8CurrentScaling", mode="Validation", verdict="Fail"} 1+0x8
  kquant_gpu_verdict{%[3]s, quantjob="ns/b", recipe="fp8", scheme="Float8CurrentScaling", mode="Benchmark", verdict="Fail"} 1+0x8
  kquant_gpu_bandwidth_bytes_per_second{%[1]s, quantjob="ns/b", recipe="fp8", scheme="Float8CurrentScaling", mode="Benchmark"} 810000000000+0x8
  kquant_gpu_bandwidth_bytes_per_second{%[2]s, quantjob="ns/b", recipe="fp8", scheme="Float8CurrentScaling", mode="Benchmark"} 811000000000+0x8
  kquant_gpu_bandwidth_bytes_per_second{%[3]s, quantjob="ns/b", recipe="fp8", scheme="Float8CurrentScaling", mode="Benchmark"} 812000000000+0x8
  kquant_gpu_bandwidth_bytes_per_second{%[4]s, quantjob="ns/b", recipe="fp8", scheme="Float8CurrentScaling", mode="Benchmark"} 810000000000+0x8
  kquant_gpu_bandwidth_bytes_per_second{%[5]s, quantjob="ns/b", recipe="fp8", scheme="Float8CurrentScaling", mode="Benchmark"} 809000000000+0x8
  kquant_gpu_bandwidth_bytes_per_second{%[6]s, quantjob="ns/b", recipe="fp8", scheme="Float8CurrentScaling", mode="Benchmark"} 610000000000+0x8
  kquant_gpu_bandwidth_bytes_per_second{%[7]s, quantjob="ns/b", recipe="fp8", scheme="Float8CurrentScaling", mode="Benchmark"} 2000000000000+0x8
  kquant_gpu_bandwidth_bytes_per_second{%[8]s, quantjob="ns/b", recipe="fp8", scheme="Float8CurrentScaling", mode="Benchmark"} 2000000000000+0x8
  kquant_gpu_bandwidth_bytes_per_second{%[9]s, quantjob="ns/b", recipe="fp8", scheme="Float8CurrentScaling", mode="Benchmark"} 100000000000+0x8
`

func TestRules(t *testing.T) {
	records, alerts := rules(t)
	gpus := []any{
		gpu("n1", "GPU-a", "0", "H100"), gpu("n1", "GPU-b", "1", "H100"), gpu("n2", "GPU-c", "0", "H100"),
		gpu("n3", "GPU-d", "0", "H100"), gpu("n3", "GPU-e", "1", "H100"), gpu("n3", "GPU-f", "2", "H100"),
		gpu("n4", "GPU-g", "0", "B200"), gpu("n4", "GPU-h", "1", "B200"), gpu("n4", "GPU-i", "2", "B200"),
	}
	script := fmt.Sprintf(series, gpus...)
	evalAt := func(expr string, want ...string) string {
		return "\neval instant at 8d " + strings.Join(strings.Fields(inline(expr, records)), " ") + "\n  " + strings.Join(want, "\n  ") + "\n"
	}
	bench := `quantjob="ns/b", recipe="fp8", scheme="Float8CurrentScaling", mode="Benchmark"`
	script += evalAt(records["kquant:gpu_bandwidth_bytes_per_second:median"],
		`{quantjob="ns/b", modelName="H100"} 810000000000`, `{quantjob="ns/b", modelName="B200"} 2000000000000`)
	script += evalAt(records["kquant:gpu_bandwidth_bytes_per_second:mad"],
		`{quantjob="ns/b", modelName="H100"} 1000000000`, `{quantjob="ns/b", modelName="B200"} 0`)
	for _, tc := range []struct {
		alert string
		want  []string
	}{
		// GPU b's latest Validation run failed; c's Benchmark "Fail" is no validation.
		{"KquantGPUValidationFailing", []string{`{` + gpu("n1", "GPU-b", "1", "H100") + `, quantjob="ns/v", recipe="fp8"} 1`}},
		// f is far below its five H100 peers; the slow B200 has too few peers.
		{"KquantGPUBandwidthOutlier", []string{`kquant_gpu_bandwidth_bytes_per_second{` + gpu("n3", "GPU-f", "2", "H100") + `, ` + bench + `} 610000000000`}},
		// Of the GPUs agents report (a, b, c): b last passed 8 days ago, c never; a half a day ago.
		{"KquantGPUNoRecentValidation", []string{`{` + gpu("n1", "GPU-b", "1", "H100") + `} 1`, `{` + gpu("n2", "GPU-c", "0", "H100") + `} 1`}},
	} {
		expr, ok := alerts[tc.alert]
		if !ok {
			t.Fatalf("no alert %s in %s", tc.alert, rulesFile)
		}
		script += evalAt(expr, tc.want...)
	}
	promqltest.RunTest(t, script, promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery))
}
