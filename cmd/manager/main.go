// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kquantscheme "github.com/kquant/kquant/api/scheme"
	"github.com/kquant/kquant/cmd/internal/version"
	"github.com/kquant/kquant/controllers"
	"github.com/kquant/kquant/controllers/hooks"
	"github.com/kquant/kquant/internal/gpulabels"
	"github.com/kquant/kquant/internal/logging"
)

type flags struct {
	kubeconfig  string
	leaderElect bool
	metricsAddr string
	// metricsSecure serves metrics over HTTPS behind the API server's authn
	// and authz; metricsCertDir holds its certificate (self-signed when empty).
	metricsSecure  bool
	metricsCertDir string
	probeAddr      string
	leaseNamespace string
	showVersion    bool
	// kubeAPIQPS and kubeAPIBurst are the client-side rate limit of every
	// request the manager makes.
	kubeAPIQPS   float64
	kubeAPIBurst int
	// workers is how many objects each controller reconciles at once.
	workers int
	// pprofAddr serves net/http/pprof, for profiling at scale; "0" is off.
	pprofAddr string
	// contentionRate samples mutex contention and blocking for pprof's
	// /mutex and /block profiles; 0 is off.
	contentionRate int
	// applyCRDs and uninstall run one of the chart's hooks instead of the manager.
	applyCRDs            string
	uninstall            bool
	uninstallPodSelector string
	uninstallTimeout     time.Duration
	// runPods are the run-pod settings.
	runPods runPodFlags
	// gpuLabels name the node and UUID labels of per-GPU metrics, as the
	// fleet's dcgm-exporter does.
	gpuLabels gpulabels.Names
	// memoryLimit is the container's memory limit, for GOMEMLIMIT.
	memoryLimit string
}

// DefaultWorkers is --max-concurrent-reconciles' default. A burst of one-run
// jobs costs each job about two round trips in its first reconcile (create the
// run, record the total): 300 jobs/s at ~20 ms per round trip needs 12 or more
// reconciles at once.
const DefaultWorkers = 16

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kquant-manager:", err)
		os.Exit(1)
	}
}

func run() error {
	var f flags
	fs := flag.NewFlagSet("kquant-manager", flag.ContinueOnError)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "path to a kubeconfig; in-cluster configuration when empty")
	fs.BoolVar(&f.leaderElect, "leader-elect", false, "elect a leader through a Lease, so that only one replica reconciles")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", `address of the Prometheus metrics endpoint; "0" disables it`)
	fs.BoolVar(&f.metricsSecure, "metrics-secure", true, "serve metrics over HTTPS and let only clients that the API server authenticates (TokenReview) and authorizes for GET /metrics (SubjectAccessReview) read them; false serves plain HTTP to anyone")
	fs.StringVar(&f.metricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for --metrics-secure; empty generates a self-signed certificate")
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz endpoints")
	fs.StringVar(&f.leaseNamespace, "lease-namespace", controllers.DefaultLeaseNamespace, "namespace of the agents' Leases, and of the leader election Lease")
	fs.BoolVar(&f.showVersion, "version", false, "print the version and exit")
	gpulabels.RegisterFlags(fs, &f.gpuLabels)
	// Without these, a config from clientcmd gets client-go's 5 QPS / burst 10,
	// which caps binding at ~2.5 runs/s (two writes per run; see
	// docs/benchmarks.md, "Controller scale"). -1 leaves the API server's
	// priority and fairness as the only limit, as controller-runtime's own
	// GetConfig does.
	fs.Float64Var(&f.kubeAPIQPS, "kube-api-qps", -1, "queries per second to the API server; -1 disables the client-side limit (the API server's priority and fairness still applies)")
	fs.IntVar(&f.kubeAPIBurst, "kube-api-burst", 1000, "burst of queries to the API server above --kube-api-qps")
	// One worker expanded one job at a time: a burst of jobs queued behind
	// each one's round trips (see docs/benchmarks.md, "Controller at scale").
	// Reconciles of different objects are independent; the binder is one
	// request whatever this says, so it stays one pass at a time.
	fs.IntVar(&f.workers, "max-concurrent-reconciles", DefaultWorkers, "objects each controller reconciles at once (the binder always runs one pass at a time)")
	fs.StringVar(&f.memoryLimit, "memory-limit", "", "the container's memory limit (a quantity; the chart passes the downward API's limits.memory): the Go collector keeps the process under 90% of it, as GOMEMLIMIT would, unless GOMEMLIMIT is set")
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "0", `address of the net/http/pprof endpoints; "0" disables them`)
	// A manager that uses a few of many cores waits on something: CPU
	// profiles do not show what, the mutex and block profiles do.
	fs.IntVar(&f.contentionRate, "pprof-contention-rate", 0, "with --pprof-bind-address, sample 1 in this many mutex contentions and one blocking event per this many nanoseconds blocked, for /debug/pprof/mutex and /block; 0 is off")
	fs.StringVar(&f.applyCRDs, "apply-crds", "", "server-side apply the CustomResourceDefinitions in this directory's *.yaml, then exit (the chart's pre-upgrade hook)")
	fs.BoolVar(&f.uninstall, "uninstall", false, "remove kquant's node labels, taints and GPUNodeProfiles once the pods of --uninstall-pod-selector in --lease-namespace are gone, then exit (the chart's post-delete hook)")
	fs.StringVar(&f.uninstallPodSelector, "uninstall-pod-selector", "", "label selector of the release's manager and agent pods that --uninstall waits for")
	fs.DurationVar(&f.uninstallTimeout, "uninstall-timeout", 5*time.Minute, "how long --uninstall waits and works before it fails")
	f.runPods.addFlags(fs)
	var logOpts logging.Options
	logOpts.AddFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if f.showVersion {
		fmt.Println(version.String("manager"))
		return nil
	}
	log, err := logOpts.New(os.Stderr)
	if err != nil {
		return err
	}
	// controller-runtime and client-go (klog) log through the same logger.
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	ctx := logging.IntoContext(ctrl.SetupSignalHandler(), log)
	switch {
	case f.applyCRDs != "":
		c, err := hookClient(f)
		if err != nil {
			return err
		}
		return hooks.ApplyCRDs(ctx, c, f.applyCRDs)
	case f.uninstall:
		return runUninstall(ctx, f)
	}
	return runManager(ctx, f)
}

// metricsOptions serves metrics plainly, or with --metrics-secure over HTTPS
// behind controller-runtime's authentication and authorization filter.
func metricsOptions(f flags) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: f.metricsAddr}
	if f.metricsSecure {
		opts.SecureServing = true
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
		if f.metricsCertDir != "" {
			opts.CertDir, opts.CertName, opts.KeyName = f.metricsCertDir, "tls.crt", "tls.key"
		}
	}
	return opts
}

// runUninstall is --uninstall: kquant's marks off the cluster, then exit.
func runUninstall(ctx context.Context, f flags) error {
	sel, err := labels.Parse(f.uninstallPodSelector)
	if err != nil {
		return fmt.Errorf("parsing --uninstall-pod-selector: %w", err)
	}
	c, err := hookClient(f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.uninstallTimeout)
	defer cancel()
	return hooks.Uninstall(ctx, c, hooks.UninstallOptions{Namespace: f.leaseNamespace, PodSelector: sel})
}

// hookClient is a direct client for a hook's few requests.
func hookClient(f flags) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return kquantscheme.NewClient(cfg)
}

func runManager(ctx context.Context, f flags) error {
	log := logging.FromContext(ctx)
	memLimit, ok, err := goMemoryLimit(f.memoryLimit, os.Getenv("GOMEMLIMIT"))
	if err != nil {
		return err
	}
	if ok {
		debug.SetMemoryLimit(memLimit)
		log.Info("Go memory limit set from the container's", "containerLimit", f.memoryLimit, "goMemoryLimitBytes", memLimit)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(f.kubeAPIQPS), f.kubeAPIBurst
	if f.pprofAddr != "0" && f.contentionRate > 0 {
		runtime.SetMutexProfileFraction(f.contentionRate)
		runtime.SetBlockProfileRate(f.contentionRate)
	}
	scheme, err := kquantscheme.New()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme:                  scheme,
		Cache:                   controllers.CacheOptions(f.leaseNamespace),
		Metrics:                 metricsOptions(f),
		Controller:              config.Controller{MaxConcurrentReconciles: f.workers},
		PprofBindAddress:        f.pprofAddr,
		HealthProbeBindAddress:  f.probeAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionID:        "kquant-manager",
		LeaderElectionNamespace: f.leaseNamespace,
		// The new leader starts at once when the old one stops cleanly.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	opts, err := f.runPods.options()
	if err != nil {
		return err
	}
	opts.LeaseNamespace = f.leaseNamespace
	opts.MetricsGPULabels = f.gpuLabels
	if err := controllers.SetupControllers(ctx, mgr, opts); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	// Ready once the caches have synced: before that the manager cannot reconcile.
	if err := mgr.AddReadyzCheck("caches", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("caches not synced")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}
	log.Info("Starting manager", "version", version.Version, "leaseNamespace", f.leaseNamespace, "leaderElect", f.leaderElect,
		"gpuAllocation", f.runPods.allocation)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}
