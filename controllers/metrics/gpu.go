// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/domain/scheduling"
	"github.com/kquant/kquant/internal/gpulabels"
)

// runLabels name what a run measured on a GPU: its job ("namespace/name";
// job is Prometheus' own label), its recipe and scheme, and its mode.
func runLabels(extra ...string) []string {
	return append([]string{"quantjob", "recipe", "scheme", "mode"}, extra...)
}

func supports() []kquantv1alpha1.Support {
	return []kquantv1alpha1.Support{kquantv1alpha1.SupportNative, kquantv1alpha1.SupportEmulated, kquantv1alpha1.SupportUnsupported}
}

func verdicts() []kquantv1alpha1.Verdict {
	return []kquantv1alpha1.Verdict{kquantv1alpha1.VerdictPass, kquantv1alpha1.VerdictFail, kquantv1alpha1.VerdictWarn, kquantv1alpha1.VerdictSkip}
}

// gpuDescs are the per-GPU series, computed at scrape time from the cache:
// GPUs from GPUNodeProfiles, results from the Succeeded QuantRuns still there
// (a run's series goes with the run, at its job's TTL).
type gpuDescs struct {
	info, support, verdict, snr, bandwidth, hostEager, hostGraph, completion, lastSuccess *prometheus.Desc
}

func newGPUDescs(l gpulabels.Names) gpuDescs {
	// desc is a per-GPU series: the GPU's identity labels, then extra. Its
	// help text names every label after what the series means, from the
	// same lists, so that the two cannot drift.
	desc := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help+"; "+l.Help()+"; "+strings.Join(extra, ", ")+".", l.Labels(extra...), nil)
	}
	return gpuDescs{
		info: desc("kquant_gpu_info", "1 for every GPU an agent reports",
			"computeCapability", "driverVersion"),
		support: desc("kquant_gpu_recipe_support",
			"1 for how the GPU supports each scheme (support Native, Emulated or Unsupported), 0 for the others",
			"scheme", "support"),
		verdict: desc("kquant_gpu_verdict",
			"1 for the verdict (Pass, Fail, Warn, Skip) of the latest finished run of a job on the GPU, 0 for the others",
			runLabels("verdict")...),
		snr: desc("kquant_gpu_snr_decibels",
			"Worst signal-to-noise ratio of the dequantized tensor in the latest finished run of a job on the GPU, in dB",
			runLabels()...),
		bandwidth: desc("kquant_gpu_bandwidth_bytes_per_second",
			"Bytes one step moves over its GPU time, in the latest finished run of a job on the GPU",
			runLabels()...),
		hostEager: desc("kquant_gpu_host_eager_seconds",
			"Host (CPU) time of one eager step in the latest finished run of a job on the GPU",
			runLabels()...),
		hostGraph: desc("kquant_gpu_host_graph_seconds",
			"Host (CPU) time of one CUDA-graph replay of a step in the latest finished run of a job on the GPU",
			runLabels()...),
		completion: desc("kquant_gpu_run_completion_timestamp_seconds",
			"When the latest finished run of a job on the GPU completed, Unix seconds",
			runLabels()...),
		lastSuccess: desc("kquant_gpu_last_success_timestamp_seconds",
			"When a Validation run of the recipe last passed (verdict Pass or Warn) on the GPU, Unix seconds, over the runs still stored",
			"recipe", "scheme"),
	}
}

func (d gpuDescs) describe(ch chan<- *prometheus.Desc) {
	for _, desc := range []*prometheus.Desc{d.info, d.support, d.verdict, d.snr, d.bandwidth, d.hostEager, d.hostGraph, d.completion, d.lastSuccess} {
		ch <- desc
	}
}

// gpuIdentity is a GPU's dcgm-exporter labels: for a MIG device, its parent
// GPU's UUID and index and its GPU instance's profile and ID. device is the
// UUID of the device itself (MIG-... for a MIG device), which tells the
// series of two slices of one GPU apart.
type gpuIdentity struct{ device, hostname, uuid, index, model, instanceProfile, instanceID string }

func (g gpuIdentity) values(extra ...string) []string {
	return append([]string{g.hostname, g.uuid, g.index, g.model, g.instanceProfile, g.instanceID}, extra...)
}

// collectGPUs sends the per-GPU series.
func (d gpuDescs) collectGPUs(ctx context.Context, reader client.Reader, ch chan<- prometheus.Metric) {
	profiles := &kquantv1alpha1.GPUNodeProfileList{}
	if err := reader.List(ctx, profiles, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	known := map[string]gpuIdentity{}
	for i := range profiles.Items {
		p := &profiles.Items[i]
		for j := range p.Status.GPUs {
			g := &p.Status.GPUs[j]
			id := gpuIdentity{device: g.UUID, hostname: p.Name, uuid: g.UUID, index: strconv.Itoa(int(g.Index)), model: g.Product}
			known[g.UUID] = id
			for _, mig := range g.MIGDevices {
				m := id
				m.device = mig.UUID
				m.instanceProfile = gpulabels.InstanceProfile(mig.Profile)
				if mig.GPUInstanceID != nil {
					m.instanceID = strconv.Itoa(int(*mig.GPUInstanceID))
				}
				known[mig.UUID] = m
			}
			ch <- prometheus.MustNewConstMetric(d.info, prometheus.GaugeValue, 1, id.values(g.ComputeCapability, p.Status.DriverVersion)...)
			for _, s := range kquantv1alpha1.Schemes {
				got, _ := scheduling.GPUSupport(g, s)
				for _, sup := range supports() {
					ch <- prometheus.MustNewConstMetric(d.support, prometheus.GaugeValue, oneIf(got == sup), id.values(string(s), string(sup))...)
				}
			}
		}
	}
	runs := &kquantv1alpha1.QuantRunList{}
	if err := reader.List(ctx, runs, client.MatchingFields{indexer.RunPhaseKey: string(kquantv1alpha1.RunPhaseSucceeded)}, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	d.collectRuns(runs.Items, known, ch)
}

// runKey is one job's series on one GPU.
type runKey struct{ device, quantjob string }

// successKey is one recipe's last success on one GPU.
type successKey struct{ device, recipe string }

func (d gpuDescs) collectRuns(runs []kquantv1alpha1.QuantRun, known map[string]gpuIdentity, ch chan<- prometheus.Metric) {
	latest := map[runKey]*kquantv1alpha1.QuantRun{}
	lastSuccess := map[successKey]*kquantv1alpha1.QuantRun{}
	for i := range runs {
		run := &runs[i]
		r := run.Status.Results
		if r == nil || run.Status.CompletionTime == nil {
			continue
		}
		id := runGPU(run, known)
		k := runKey{id.device, run.Namespace + "/" + run.Spec.JobRef.Name}
		if prev := latest[k]; prev == nil || prev.Status.CompletionTime.Before(run.Status.CompletionTime) {
			latest[k] = run
		}
		if run.Spec.Mode == kquantv1alpha1.JobModeValidation && r.Verdict.Passes() {
			sk := successKey{id.device, run.Spec.Recipe.Name}
			if prev := lastSuccess[sk]; prev == nil || prev.Status.CompletionTime.Before(run.Status.CompletionTime) {
				lastSuccess[sk] = run
			}
		}
	}
	for k, run := range latest {
		id := runGPU(run, known)
		r := run.Status.Results
		labels := id.values(k.quantjob, run.Spec.Recipe.Name, string(run.Spec.Recipe.Spec.Scheme), string(run.Spec.Mode))
		for _, v := range verdicts() {
			ch <- prometheus.MustNewConstMetric(d.verdict, prometheus.GaugeValue, oneIf(r.Verdict == v), append(labels, string(v))...)
		}
		ch <- prometheus.MustNewConstMetric(d.completion, prometheus.GaugeValue, unixSeconds(run.Status.CompletionTime.Time), labels...)
		if a := r.Accuracy; a != nil {
			sendDecimal(ch, d.snr, a.SNRdB, 1, labels)
		}
		if p := r.Performance; p != nil {
			sendDecimal(ch, d.bandwidth, p.BandwidthGBps, 1e9, labels)
		}
		if o := r.Overhead; o != nil {
			sendDecimal(ch, d.hostEager, o.HostEagerMicros, 1e-6, labels)
			sendDecimal(ch, d.hostGraph, o.HostGraphMicros, 1e-6, labels)
		}
	}
	for k, run := range lastSuccess {
		id := runGPU(run, known)
		ch <- prometheus.MustNewConstMetric(d.lastSuccess, prometheus.GaugeValue, unixSeconds(run.Status.CompletionTime.Time),
			id.values(k.recipe, string(run.Spec.Recipe.Spec.Scheme))...)
	}
}

// runGPU is the GPU a run ran on: the one its run pod got when it says so,
// else the one it was bound to; a MIG device as its parent GPU and GPU
// instance, from the node's profile.
func runGPU(run *kquantv1alpha1.QuantRun, known map[string]gpuIdentity) gpuIdentity {
	device, parent, index := run.Spec.GPUUUID, "", run.Spec.GPUIndex
	if a := run.Status.AllocatedGPU; a != nil && a.UUID != "" {
		device, index = a.UUID, a.Index
		if a.MIGDevice != "" {
			device, parent = a.MIGDevice, a.UUID
		}
	}
	if id, ok := known[device]; ok {
		return id
	}
	// A GPU no profile lists any more: what the run itself says.
	id := gpuIdentity{device: device, hostname: run.Spec.NodeName, uuid: cmp.Or(parent, device), model: run.Annotations[quantrun.AnnotationProduct]}
	if index != nil {
		id.index = strconv.Itoa(int(*index))
	}
	if run.Spec.MIGProfile != "" {
		id.instanceProfile = gpulabels.InstanceProfile(run.Spec.MIGProfile)
	}
	return id
}

// sendDecimal sends a decimal string times scale (to base units); nothing
// for an empty or malformed one.
func sendDecimal(ch chan<- prometheus.Metric, desc *prometheus.Desc, s string, scale float64, labels []string) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v*scale, labels...)
}

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// SeriesLabels are the labels of the per-GPU series besides the GPU's
// identity: a configured GPU label name must not take one of them.
func SeriesLabels() []string {
	return append(runLabels("verdict"), "computeCapability", "driverVersion", "support")
}
