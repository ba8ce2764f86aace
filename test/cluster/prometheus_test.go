// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build cluster

package cluster

import (
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/gatepolicy"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
)

// The scrape jobs of the Prometheus server that prometheusScrapesAndAlerts
// starts.
const (
	jobManager        = "kquant-manager"
	jobManagerNoGrant = "kquant-manager-no-grant"
	jobAgent          = "kquant-agent"
)

// dcgmLabels are the labels every kquant_gpu_* series carries, as
// dcgm-exporter's DCGM_FI_DEV_* series do.
var dcgmLabels = []model.LabelName{"hostname", "UUID", "gpu", "modelName"}

// prometheusScrapesAndAlerts runs a Prometheus server (Debian's package,
// hack/prometheus-assets.sh) on the node, as a process: it reaches the pods
// on the cluster's bridge. It scrapes the manager's HTTPS metrics endpoint
// with the TokenRequest token of a ServiceAccount bound to the chart's
// <release>-metrics-reader ClusterRole (as kube-prometheus' Prometheus does),
// the same endpoint with the token of a ServiceAccount without the binding
// (refused: 403), and the agent's plain endpoint, and it loads the chart's
// PrometheusRule (helm template) as its rule file. A QuantGatePolicy's
// validation with a tolerance no GPU meets fails on every GPU: KquantGPUValidationFailing fires
// for each, every rule evaluates without error, and each alert's expression,
// queried on the real series, gives what the cluster's objects say. The
// failing gate stays on the node for helm uninstall, whose hook removes it.
func prometheusScrapesAndAlerts(t *testing.T, cl *cluster) {
	ns := cl.namespace(t, "e2e-prometheus")
	failing := builders.MakeQuantGatePolicy("e2e-prometheus", "fp8-current-scaling").Label(true).Taint(corev1.TaintEffectNoSchedule).MinSNRdB("150").Obj()
	if err := cl.c.Create(t.Context(), failing); err != nil {
		t.Fatal(err)
	}
	// The policy's first validation job, in the manager's namespace.
	failingJob := systemNamespace + "/" + gatepolicy.JobName(failing.Name, 1, 0)

	// Two identities: one bound to the metrics reader, one not.
	binding := "e2e-prometheus-metrics"
	cl.kubectl(t, "create", "serviceaccount", "prometheus", "-n", ns)
	cl.kubectl(t, "create", "serviceaccount", "stranger", "-n", ns)
	cl.kubectl(t, "create", "clusterrolebinding", binding, "--clusterrole="+release+"-metrics-reader", "--serviceaccount="+ns+":prometheus")
	defer cl.kubectl(t, "delete", "clusterrolebinding", binding)
	readerToken := strings.TrimSpace(cl.kubectl(t, "create", "token", "prometheus", "-n", ns, "--duration=1h"))
	strangerToken := strings.TrimSpace(cl.kubectl(t, "create", "token", "stranger", "-n", ns, "--duration=1h"))

	manager := cl.readyPod(t, "manager", time.Minute)
	agent := cl.readyPod(t, "agent", time.Minute)
	managerURL := fmt.Sprintf("https://%s/metrics", net.JoinHostPort(manager.Status.PodIP, "8080"))
	agentURL := fmt.Sprintf("http://%s/metrics", net.JoinHostPort(agent.Status.PodIP, "8080"))

	// The manager's endpoint, by hand: who may read it.
	for _, c := range []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount without the metrics-reader binding", strangerToken, http.StatusForbidden},
		{"the metrics reader", readerToken, http.StatusOK},
	} {
		code, body := scrape(t, managerURL, c.token)
		if code != c.want {
			t.Errorf("GET %s with %s: %d, want %d: %.200s", managerURL, c.who, code, c.want, body)
		}
		if c.want == http.StatusOK && !strings.Contains(body, "kquant_gpu_info{") {
			t.Errorf("the manager's metrics lack kquant_gpu_info:\n%.500s", body)
		}
		t.Logf("GET %s with %s: %d", managerURL, c.who, code)
	}

	if code, body := scrape(t, agentURL, ""); code != http.StatusOK || !strings.Contains(body, "# HELP") {
		t.Errorf("GET %s: %d, want 200 and metrics (the agent serves plain HTTP): %.200s", agentURL, code, body)
	}

	dir := t.TempDir()
	rules := cl.chartRules(t, filepath.Join(dir, "rules.yaml"))
	prom := startPrometheus(t, cl, dir, map[string]string{"reader": readerToken, "stranger": strangerToken},
		manager.Status.PodIP+":8080", agent.Status.PodIP+":8080")
	defer prom.stop(t)

	// The targets: up with the reader's token and for the agent; down, with
	// the filter's 403, for the stranger.
	var targets promv1.TargetsResult
	eventually(t, time.Minute, "the scrape targets' health", func() error {
		var err error
		if targets, err = prom.api.Targets(t.Context()); err != nil {
			return err
		}
		want := map[string]promv1.HealthStatus{jobManager: promv1.HealthGood, jobAgent: promv1.HealthGood, jobManagerNoGrant: promv1.HealthBad}
		for _, tg := range targets.Active {
			if tg.Health != want[tg.ScrapePool] {
				return fmt.Errorf("%s (%s): %s %s", tg.ScrapePool, tg.ScrapeURL, tg.Health, tg.LastError)
			}
			if tg.ScrapePool == jobManagerNoGrant && !strings.Contains(tg.LastError, "403") {
				return fmt.Errorf("%s: %q, want the filter's 403", tg.ScrapePool, tg.LastError)
			}
			delete(want, tg.ScrapePool)
		}
		if len(want) > 0 {
			return fmt.Errorf("no targets for %v", want)
		}
		return nil
	})

	for _, tg := range targets.Active {
		t.Logf("target %s %s: %s %s", tg.ScrapePool, tg.ScrapeURL, tg.Health, tg.LastError)
	}

	// The per-GPU series, with dcgm-exporter's labels; the agent's own.
	info := prom.waitSeries(t, time.Minute, `kquant_gpu_info{job="`+jobManager+`"}`, simulatedGPUs)
	for _, s := range info {
		for _, l := range dcgmLabels {
			if s.Metric[l] == "" {
				t.Errorf("kquant_gpu_info lacks label %s: %s", l, s.Metric)
			}
		}
		if s.Metric["hostname"] != node {
			t.Errorf("kquant_gpu_info hostname %q, want %q", s.Metric["hostname"], node)
		}
	}
	agentSeries := prom.waitSeries(t, time.Minute, `count by (__name__) ({job="`+jobAgent+`"})`, 1)
	t.Logf("the agent's endpoint: %d metric names, kquant's: %v", len(agentSeries),
		slices.DeleteFunc(labelValues(agentSeries, "__name__"), func(n string) bool { return !strings.HasPrefix(n, "kquant_") }))

	verdicts := prom.waitSeries(t, 5*time.Minute, `kquant_gpu_verdict{quantjob="`+failingJob+`", verdict="Fail"} == 1`, simulatedGPUs)
	failingUUIDs := labelValues(verdicts, "UUID")
	t.Logf("job %s: verdict Fail on %v", failingJob, failingUUIDs)

	// Every rule of the chart loads and evaluates.
	eventually(t, time.Minute, "every rule evaluated without error", func() error {
		got, err := prom.api.Rules(t.Context(), nil)
		if err != nil {
			return err
		}
		n := 0
		for _, g := range got.Groups {
			for _, r := range g.Rules {
				name, health, lastErr := ruleState(r)
				if health != promv1.RuleHealthGood {
					return fmt.Errorf("rule %s: %s %s", name, health, lastErr)
				}
				n++
			}
		}
		if want := len(rules.all()); n != want {
			return fmt.Errorf("%d rules loaded, want %d", n, want)
		}
		return nil
	})

	// KquantGPUValidationFailing fires for each failing GPU, its summary
	// filled in from the labels.
	eventually(t, time.Minute, "KquantGPUValidationFailing firing for every GPU of "+failingJob, func() error {
		alerts, err := prom.api.Alerts(t.Context())
		if err != nil {
			return err
		}
		var firing []string
		for _, a := range alerts.Alerts {
			if a.Labels["alertname"] != "KquantGPUValidationFailing" || string(a.Labels["quantjob"]) != failingJob || a.State != promv1.AlertStateFiring {
				continue
			}
			if !strings.Contains(string(a.Annotations["summary"]), string(a.Labels["UUID"])) {
				return fmt.Errorf("summary %q does not name the GPU", a.Annotations["summary"])
			}
			firing = append(firing, string(a.Labels["UUID"]))
		}
		sort.Strings(firing)
		if !slices.Equal(firing, failingUUIDs) {
			return fmt.Errorf("firing for %v, want %v", firing, failingUUIDs)
		}
		return nil
	})

	// Each alert's expression, queried on the real series.
	for _, r := range rules.alerts() {
		res := prom.query(t, r.Expr)
		t.Logf("%s: %d series", r.Alert, len(res))
		switch r.Alert {
		case "KquantGPUValidationFailing":
			var got []string
			for _, s := range res {
				if string(s.Metric["quantjob"]) == failingJob {
					got = append(got, string(s.Metric["UUID"]))
				}
			}
			sort.Strings(got)
			if !slices.Equal(got, failingUUIDs) {
				t.Errorf("%s for %s: GPUs %v, want %v", r.Alert, failingJob, got, failingUUIDs)
			}
		case "KquantGPUBandwidthOutlier":
			// The cluster has 4 GPUs of one model: fewer than the 5 that the
			// alert asks of a job, so nothing is an outlier. The recording
			// rules' count agrees with the raw series of the jobs that
			// measured bandwidth (Benchmark jobs of the earlier scenarios).
			raw := map[string]int{}
			for _, s := range prom.query(t, "kquant_gpu_bandwidth_bytes_per_second") {
				raw[string(s.Metric["quantjob"])+" "+string(s.Metric["modelName"])]++
			}
			recorded := map[string]int{}
			for _, c := range prom.query(t, "kquant:gpu_bandwidth_bytes_per_second:count") {
				recorded[string(c.Metric["quantjob"])+" "+string(c.Metric["modelName"])] = int(c.Value)
			}
			if !maps.Equal(raw, recorded) {
				t.Errorf("kquant:gpu_bandwidth_bytes_per_second:count %v, want the raw series' %v", recorded, raw)
			}
			t.Logf("bandwidth series per job and model: %v", recorded)
			if len(res) != 0 {
				t.Errorf("%s with %d GPUs per job: %v, want none", r.Alert, simulatedGPUs, res)
			}
		case "KquantGPUNoRecentValidation":
			// Against the API, again while the scrape (every 2 s) catches up.
			eventually(t, 30*time.Second, r.Alert+" selects the GPUs without a passing Validation run stored", func() error {
				want := cl.gpusWithoutPassingValidation(t)
				if got := labelValues(prom.query(t, r.Expr), "UUID"); !slices.Equal(got, want) {
					return fmt.Errorf("GPUs %v, want %v", got, want)
				}
				return nil
			})
			t.Logf("%s: GPUs without a passing validation: %v", r.Alert, labelValues(res, "UUID"))
		default:
			t.Errorf("alert %s has no check here", r.Alert)
		}
	}

	eventually(t, time.Minute, "node "+node+" gated by "+failingJob, func() error {
		return cl.nodeGate(t, failing.Name, true)
	})
}

// scrape GETs a metrics endpoint with a bearer token ("": none), trusting the
// manager's self-signed certificate.
func scrape(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// ruleFile is the chart's rule file, as Prometheus reads one.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Record string `json:"record"`
			Alert  string `json:"alert"`
			Expr   string `json:"expr"`
		} `json:"rules"`
	} `json:"groups"`
}

func (f ruleFile) all() []string {
	var out []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Record+r.Alert)
		}
	}
	return out
}

type alertRule struct{ Alert, Expr string }

func (f ruleFile) alerts() []alertRule {
	var out []alertRule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, alertRule{r.Alert, r.Expr})
			}
		}
	}
	return out
}

// chartRules renders the chart's PrometheusRule (helm template, the values
// of the cluster's release and monitoring.prometheusRule.enabled) and writes
// its spec as a plain rule file to path.
func (cl *cluster) chartRules(t *testing.T, path string) ruleFile {
	t.Helper()
	out, err := cl.helm(t, "template", release, filepath.Join(testenv.RepoRoot(), "charts", "kquant"),
		"--namespace", systemNamespace, "--show-only", "templates/monitoring/prometheusrule.yaml",
		"--set", "monitoring.prometheusRule.enabled=true")
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(out), &rule); err != nil || rule.Kind != "PrometheusRule" {
		t.Fatalf("the chart's PrometheusRule: %v\n%.500s", err, out)
	}
	file, err := yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(file, &rf); err != nil {
		t.Fatal(err)
	}
	if len(rf.alerts()) != 3 {
		t.Fatalf("the chart's PrometheusRule has alerts %v, want three", rf.alerts())
	}
	return rf
}

// gpusWithoutPassingValidation are the UUIDs, sorted, of the GPUs in the
// GPUNodeProfiles that no stored Validation run passed on (Pass or Warn):
// what KquantGPUNoRecentValidation's expression selects while every stored
// run is minutes old.
func (cl *cluster) gpusWithoutPassingValidation(t *testing.T) []string {
	t.Helper()
	passed := map[string]bool{}
	runs := &v1alpha1.QuantRunList{}
	if err := cl.c.List(t.Context(), runs); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs.Items {
		if r.Spec.Mode != v1alpha1.JobModeValidation || r.Status.CompletionTime == nil || r.Status.Results == nil || !r.Status.Results.Verdict.Passes() {
			continue
		}
		uuid := r.Spec.GPUUUID
		if a := r.Status.AllocatedGPU; a != nil && a.UUID != "" {
			uuid = a.UUID
		}
		passed[uuid] = true
	}
	profiles := &v1alpha1.GPUNodeProfileList{}
	if err := cl.c.List(t.Context(), profiles); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range profiles.Items {
		for _, g := range p.Status.GPUs {
			if !passed[g.UUID] {
				out = append(out, g.UUID)
			}
		}
	}
	sort.Strings(out)
	return out
}

// ruleState is a rule's name and health from the rules API.
func ruleState(r any) (string, promv1.RuleHealth, string) {
	switch r := r.(type) {
	case promv1.AlertingRule:
		return r.Name, r.Health, r.LastError
	case promv1.RecordingRule:
		return r.Name, r.Health, r.LastError
	}
	return fmt.Sprintf("%T", r), "", ""
}

// labelValues are the sorted values of a label over a query's series.
func labelValues(v model.Vector, l model.LabelName) []string {
	var out []string
	for _, s := range v {
		out = append(out, string(s.Metric[l]))
	}
	sort.Strings(out)
	return out
}

// prometheus is a Prometheus server running on the node.
type prometheus struct {
	cmd *exec.Cmd
	api promv1.API
	log string
}

// startPrometheus writes a configuration that scrapes the manager at
// managerAddr (HTTPS, as jobManager with tokens["reader"] and as
// jobManagerNoGrant with tokens["stranger"]) and the agent at agentAddr
// (HTTP, jobAgent) every 2 s, evaluates dir/rules.yaml as often, and starts
// Debian's Prometheus on a free local port; its log goes to the cluster's
// logs (.cluster/logs/prometheus.log).
func startPrometheus(t *testing.T, cl *cluster, dir string, tokens map[string]string, managerAddr, agentAddr string) *prometheus {
	t.Helper()
	bin, err := script(testenv.RepoRoot(), "hack/prometheus-assets.sh")
	if err != nil {
		t.Fatal(err)
	}
	for name, token := range tokens {
		if err := os.WriteFile(filepath.Join(dir, name+".token"), []byte(token), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	managerJob := func(name, token string) map[string]any {
		return map[string]any{
			"job_name":       name,
			"scheme":         "https",
			"tls_config":     map[string]any{"insecure_skip_verify": true},
			"authorization":  map[string]any{"credentials_file": filepath.Join(dir, token+".token")},
			"static_configs": []any{map[string]any{"targets": []string{managerAddr}}},
		}
	}
	config, err := yaml.Marshal(map[string]any{
		"global":     map[string]any{"scrape_interval": "2s", "scrape_timeout": "2s", "evaluation_interval": "2s"},
		"rule_files": []string{filepath.Join(dir, "rules.yaml")},
		"scrape_configs": []any{
			managerJob(jobManager, "reader"),
			managerJob(jobManagerNoGrant, "stranger"),
			map[string]any{"job_name": jobAgent, "static_configs": []any{map[string]any{"targets": []string{agentAddr}}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), config, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t.Context(), nil, filepath.Join(bin, "promtool"), "check", "config", filepath.Join(dir, "prometheus.yml")); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("promtool check config:\n%s", out)
	}

	addr := testenv.FreeLocalAddr(t)
	logPath := filepath.Join(cl.dir, "logs", "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(bin, "prometheus"),
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &prometheus{cmd: cmd, log: logPath}
	c, err := promapi.NewClient(promapi.Config{Address: "http://" + addr})
	if err != nil {
		p.stop(t)
		t.Fatal(err)
	}
	p.api = promv1.NewAPI(c)
	eventually(t, time.Minute, "Prometheus ready at "+addr, func() error {
		if cmd.ProcessState != nil {
			return fmt.Errorf("exited: %s", cmd.ProcessState)
		}
		_, err := p.api.Buildinfo(t.Context())
		return err
	})
	info, _ := p.api.Buildinfo(t.Context())
	t.Logf("Prometheus %s (pid %d) at %s, log %s", info.Version, cmd.Process.Pid, addr, logPath)
	return p
}

// stop ends the server (SIGTERM, then SIGKILL after 10 s).
func (p *prometheus) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Logf("stopping Prometheus: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// query evaluates an instant query now; it must parse and evaluate.
func (p *prometheus) query(t *testing.T, q string) model.Vector {
	t.Helper()
	v, err := p.instant(t, q)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (p *prometheus) instant(t *testing.T, q string) (model.Vector, error) {
	v, warnings, _, err := p.api.Query(t.Context(), q, time.Now())
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q, err)
	}
	if len(warnings) > 0 {
		return nil, fmt.Errorf("query %s: warnings %v", q, warnings)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("query %s: a %s, want a vector", q, v.Type())
	}
	return vec, nil
}

// waitSeries waits until an instant query gives at least n series.
func (p *prometheus) waitSeries(t *testing.T, timeout time.Duration, q string, n int) model.Vector {
	t.Helper()
	var got model.Vector
	eventually(t, timeout, fmt.Sprintf("%d series of %s", n, q), func() error {
		var err error
		if got, err = p.instant(t, q); err != nil {
			return err
		}
		if len(got) < n {
			return fmt.Errorf("%d series", len(got))
		}
		return nil
	})
	return got
}
