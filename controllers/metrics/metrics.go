// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers/internal/indexer"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/internal/gpulabels"
	"github.com/kquant/kquant/internal/metricsreg"
)

// scrapeTimeout bounds a scrape's reads of the cache.
const scrapeTimeout = 5 * time.Second

// Metrics are the controller's metrics.
type Metrics struct {
	runsTotal         *prometheus.CounterVec
	schedulingLatency prometheus.Histogram
	pendingRuns       *prometheus.Desc
	unschedulableJobs *prometheus.Desc
	runsByPhase       *prometheus.Desc
	jobsByPhase       *prometheus.Desc
	gpus              gpuDescs
	reader            client.Reader
	// elected closes when this replica leads (at once without leader
	// election). Every replica's cache holds the same objects, so gauges
	// computed from it are exported by the leader only: with two replicas a
	// sum() over a fleet would otherwise count every GPU twice.
	elected <-chan struct{}
}

// New returns the metrics; gauges read from reader (the manager's cache) and
// are exported once elected is closed (the manager's Elected()). Per-GPU
// series name the node and the UUID as labels says (validated by the caller).
func New(reader client.Reader, elected <-chan struct{}, labels gpulabels.Names) *Metrics {
	return &Metrics{
		runsTotal: metricsreg.PhaseCounter("kquant_runs_total",
			"QuantRuns that entered a phase, by phase (Pending, Bound, Running, Succeeded, Failed), as seen by the manager since it started."),
		schedulingLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kquant_run_scheduling_latency_seconds",
			Help:    "Binding latency: time from a QuantRun's creation to its binding to a GPU, in seconds. No labels.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
		}),
		pendingRuns:       prometheus.NewDesc("kquant_runs_pending", "QuantRuns waiting for a GPU. No labels.", nil, nil),
		unschedulableJobs: prometheus.NewDesc("kquant_jobs_unschedulable", "QuantJobs in phase Unschedulable. No labels.", nil, nil),
		runsByPhase: prometheus.NewDesc("kquant_runs",
			"QuantRuns stored now, by phase (Pending, Bound, Running, Succeeded, Failed; Pending is the queue of runs waiting for a GPU).", []string{metricsreg.Phase}, nil),
		jobsByPhase: prometheus.NewDesc("kquant_jobs",
			"QuantJobs stored now, by phase (Pending, Running, Succeeded, Failed, Unschedulable).", []string{metricsreg.Phase}, nil),
		gpus:    newGPUDescs(labels),
		reader:  reader,
		elected: elected,
	}
}

// Register registers every metric with reg.
func (m *Metrics) Register(reg prometheus.Registerer) error {
	return metricsreg.Register(reg, m.runsTotal, m.schedulingLatency, gauges{m})
}

// ObserveBinding records the scheduling latency of a run bound at boundAt.
func (m *Metrics) ObserveBinding(run *kquantv1alpha1.QuantRun, boundAt time.Time) {
	m.schedulingLatency.Observe(boundAt.Sub(run.CreationTimestamp.Time).Seconds())
}

// RunPhaseHandler counts phase changes of QuantRuns; register it with the
// QuantRun informer. Objects of the informer's initial list are not counted,
// so a restart does not count old runs again.
func (m *Metrics) RunPhaseHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if run, ok := obj.(*kquantv1alpha1.QuantRun); ok && !initial {
				m.runsTotal.WithLabelValues(string(quantrun.Phase(run))).Inc()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*kquantv1alpha1.QuantRun)
			n, ok2 := newObj.(*kquantv1alpha1.QuantRun)
			if ok1 && ok2 && quantrun.Phase(o) != quantrun.Phase(n) {
				m.runsTotal.WithLabelValues(string(quantrun.Phase(n))).Inc()
			}
		},
	}
}

// gauges computes the gauges at scrape time.
type gauges struct{ m *Metrics }

func (g gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.m.pendingRuns
	ch <- g.m.unschedulableJobs
	ch <- g.m.runsByPhase
	ch <- g.m.jobsByPhase
	g.m.gpus.describe(ch)
}

func (g gauges) Collect(ch chan<- prometheus.Metric) {
	select {
	case <-g.m.elected:
	default:
		return
	}
	// A scrape has no context of its own; bound its cache reads.
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	runs := &kquantv1alpha1.QuantRunList{}
	if err := g.m.reader.List(ctx, runs, client.MatchingFields{indexer.RunPhaseKey: string(kquantv1alpha1.RunPhasePending)}, client.UnsafeDisableDeepCopy); err == nil {
		n := 0
		for i := range runs.Items {
			if quantrun.IsWaiting(&runs.Items[i]) {
				n++
			}
		}
		ch <- prometheus.MustNewConstMetric(g.m.pendingRuns, prometheus.GaugeValue, float64(n))
	}
	jobs := &kquantv1alpha1.QuantJobList{}
	if err := g.m.reader.List(ctx, jobs, client.MatchingFields{indexer.JobPhaseKey: string(kquantv1alpha1.JobPhaseUnschedulable)}, client.UnsafeDisableDeepCopy); err == nil {
		ch <- prometheus.MustNewConstMetric(g.m.unschedulableJobs, prometheus.GaugeValue, float64(len(jobs.Items)))
	}
	g.collectByPhase(ctx, ch)
	g.m.gpus.collectGPUs(ctx, g.m.reader, ch)
}

// collectByPhase counts stored runs and jobs by phase, through the phase
// indexes (a bound run not yet started counts as Bound).
func (g gauges) collectByPhase(ctx context.Context, ch chan<- prometheus.Metric) {
	for _, p := range []kquantv1alpha1.RunPhase{kquantv1alpha1.RunPhasePending, kquantv1alpha1.RunPhaseBound, kquantv1alpha1.RunPhaseRunning,
		kquantv1alpha1.RunPhaseSucceeded, kquantv1alpha1.RunPhaseFailed} {
		runs := &kquantv1alpha1.QuantRunList{}
		if err := g.m.reader.List(ctx, runs, client.MatchingFields{indexer.RunPhaseKey: string(p)}, client.UnsafeDisableDeepCopy); err == nil {
			ch <- prometheus.MustNewConstMetric(g.m.runsByPhase, prometheus.GaugeValue, float64(len(runs.Items)), string(p))
		}
	}
	for _, p := range []kquantv1alpha1.JobPhase{kquantv1alpha1.JobPhasePending, kquantv1alpha1.JobPhaseRunning, kquantv1alpha1.JobPhaseSucceeded,
		kquantv1alpha1.JobPhaseFailed, kquantv1alpha1.JobPhaseUnschedulable} {
		jobs := &kquantv1alpha1.QuantJobList{}
		if err := g.m.reader.List(ctx, jobs, client.MatchingFields{indexer.JobPhaseKey: string(p)}, client.UnsafeDisableDeepCopy); err == nil {
			ch <- prometheus.MustNewConstMetric(g.m.jobsByPhase, prometheus.GaugeValue, float64(len(jobs.Items)), string(p))
		}
	}
}
