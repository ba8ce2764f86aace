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

// gpu is the dcgm-exporter labels of a test GPU, as its current release
// names them (internal/gpulabels).
func gpu(host, uuid, index, model string) string {
	return fmt.Sprintf(`hostname=%q, UUID=%q, gpu=%q, modelName=%q`, host, uuid, index, model)
}

// migDevice is the dcgm-exporter labels of a MIG device: its parent GPU's
// UUID and index, and its GPU instance.
func migDevice(host, parent, index, model, profile, instance string) string {
	return gpu(host, parent, index, model) + fmt.Sprintf(`, GPU_I_PROFILE=%q, GPU_I_ID=%q`, profile, instance)
}

// evalAt is a promqltest instant evaluation of expr (recording rules
// inlined) at time at, expecting want.
func evalAt(at, expr string, records map[string]string, want ...string) string {
	return "\neval instant at " + at + " " + strings.Join(strings.Fields(inline(expr, records)), " ") + "\n  " + strings.Join(want, "\n  ") + "\n"
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
	evalAt := func(expr string, want ...string) string { return evalAt("8d", expr, records, want...) }
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

// TestOutlierNoise: when a job's GPUs all report the same bandwidth, one GPU
// 0.1 GB/s below the others is noise, not an outlier (the MAD is 0, so 3 MADs
// alone would call it one); a GPU 10% below is an outlier; and a job on
// fewer GPUs than the minimum fleet is never judged.
func TestOutlierNoise(t *testing.T) {
	records, alerts := rules(t)
	expr, ok := alerts["KquantGPUBandwidthOutlier"]
	if !ok {
		t.Fatalf("no alert KquantGPUBandwidthOutlier in %s", rulesFile)
	}
	series := "load 1m\n"
	add := func(job string, n int, value string) {
		for i := range n {
			series += fmt.Sprintf("  kquant_gpu_bandwidth_bytes_per_second{%s, quantjob=%q, recipe=\"fp8\", scheme=\"Float8CurrentScaling\", mode=\"Benchmark\"} %s+0x10\n",
				gpu("n-"+job, fmt.Sprintf("GPU-%s-%d", job, i), fmt.Sprint(i), "H100"), job, value)
		}
	}
	// ns/equal: seven equal GPUs and one 0.1 GB/s (1e8 B/s) slower.
	add("ns/equal", 7, "800000000000")
	series += fmt.Sprintf("  kquant_gpu_bandwidth_bytes_per_second{%s, quantjob=\"ns/equal\", recipe=\"fp8\", scheme=\"Float8CurrentScaling\", mode=\"Benchmark\"} 799900000000+0x10\n",
		gpu("n-ns/equal", "GPU-slightly-slow", "7", "H100"))
	// ns/real: seven equal GPUs and one 10% slower.
	add("ns/real", 7, "800000000000")
	series += fmt.Sprintf("  kquant_gpu_bandwidth_bytes_per_second{%s, quantjob=\"ns/real\", recipe=\"fp8\", scheme=\"Float8CurrentScaling\", mode=\"Benchmark\"} 720000000000+0x10\n",
		gpu("n-ns/real", "GPU-slow", "7", "H100"))
	// ns/few: three equal GPUs and one far slower, below the minimum fleet of 5.
	add("ns/few", 3, "800000000000")
	series += fmt.Sprintf("  kquant_gpu_bandwidth_bytes_per_second{%s, quantjob=\"ns/few\", recipe=\"fp8\", scheme=\"Float8CurrentScaling\", mode=\"Benchmark\"} 100000000000+0x10\n",
		gpu("n-ns/few", "GPU-lonely", "3", "H100"))
	script := series + evalAt("5m", expr, records,
		`kquant_gpu_bandwidth_bytes_per_second{`+gpu("n-ns/real", "GPU-slow", "7", "H100")+`, quantjob="ns/real", recipe="fp8", scheme="Float8CurrentScaling", mode="Benchmark"} 720000000000`)
	promqltest.RunTest(t, script, promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery))
}

// TestJoinsDCGMExporter: kquant's per-GPU series join a dcgm-exporter
// sample series on the labels the docs name (docs/monitoring.md): a whole
// GPU on UUID, or on hostname and gpu; a MIG device on its parent's UUID
// plus GPU_I_PROFILE and GPU_I_ID, as dcgm-exporter labels MIG series.
func TestJoinsDCGMExporter(t *testing.T) {
	whole := gpu("n1", "GPU-a", "0", "H100")
	mig1 := migDevice("n1", "GPU-m", "1", "H100", "1g.10gb", "7")
	mig2 := migDevice("n1", "GPU-m", "1", "H100", "2g.20gb", "3")
	// dcgm-exporter's own labels besides kquant's: pci_bus_id, device,
	// and the scrape's.
	dcgm := `, pci_bus_id="00000000:18:00.0", device="nvidia0", job="dcgm-exporter", instance="10.0.0.1:9400"`
	run := `quantjob="ns/b", recipe="fp8", scheme="Float8CurrentScaling", mode="Benchmark"`
	kq := `, job="kquant-manager", instance="10.0.0.2:8443"`
	script := fmt.Sprintf(`
load 1m
  DCGM_FI_DEV_GPU_UTIL{%[1]s%[4]s} 80+0x10
  DCGM_FI_DEV_GPU_UTIL{%[2]s%[4]s} 40+0x10
  DCGM_FI_DEV_GPU_UTIL{%[3]s%[4]s} 50+0x10
  kquant_gpu_info{%[1]s, computeCapability="9.0", driverVersion="580"%[6]s} 1+0x10
  kquant_gpu_bandwidth_bytes_per_second{%[1]s, %[5]s%[6]s} 800000000000+0x10
  kquant_gpu_bandwidth_bytes_per_second{%[2]s, %[5]s%[6]s} 100000000000+0x10
  kquant_gpu_bandwidth_bytes_per_second{%[3]s, %[5]s%[6]s} 200000000000+0x10
`, whole, mig1, mig2, dcgm, run, kq)
	join := "(hostname, UUID, gpu, GPU_I_PROFILE, GPU_I_ID)"
	// Utilization of each validated GPU: the dashboard's join on UUID.
	script += evalAt("5m", `DCGM_FI_DEV_GPU_UTIL * on (UUID) group_left () max by (UUID) (kquant_gpu_info)`, nil,
		`{`+whole+dcgm+`} 80`)
	// Bandwidth per unit of utilization, one result per GPU and per MIG
	// device: the documented join labels tell the two slices of GPU-m apart.
	script += evalAt("5m", `max by `+join+` (kquant_gpu_bandwidth_bytes_per_second) / on `+join+` group_left () max by `+join+` (DCGM_FI_DEV_GPU_UTIL)`, nil,
		`{hostname="n1", UUID="GPU-a", gpu="0"} 10000000000`,
		`{hostname="n1", UUID="GPU-m", gpu="1", GPU_I_PROFILE="1g.10gb", GPU_I_ID="7"} 2500000000`,
		`{hostname="n1", UUID="GPU-m", gpu="1", GPU_I_PROFILE="2g.20gb", GPU_I_ID="3"} 4000000000`)
	// The same on hostname and gpu for whole GPUs.
	script += evalAt("5m", `max by (hostname, gpu) (kquant_gpu_info) * on (hostname, gpu) group_right () DCGM_FI_DEV_GPU_UTIL`, nil,
		`{`+whole+dcgm+`} 80`)
	promqltest.RunTest(t, script, promqltest.NewTestEngine(t, false, 0, promqltest.DefaultMaxSamplesPerQuery))
}
