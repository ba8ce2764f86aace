// Package metrics holds kquant's Prometheus metrics. Counters and histograms
// are fed by the controllers; gauges (pending runs, unschedulable jobs) are
// computed from the cache at scrape time, so a deleted object never leaves a
// stale series. Everything is registered with the registry passed to Register
// (controller-runtime's in the manager), never in init.
//
//	kquant_runs_total{phase}                 runs that entered phase, as the manager saw them
//	kquant_run_scheduling_latency_seconds    from run creation to binding to a GPU
//	kquant_runs_pending                      runs waiting for a GPU
//	kquant_jobs_unschedulable                jobs with no eligible GPU
package metrics
