// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kquant/kquant/agent/nodeagent"
	"github.com/kquant/kquant/agent/podresources"
	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/cmd/internal/version"
	"github.com/kquant/kquant/internal/gpulabels"
	"github.com/kquant/kquant/internal/logging"
)

// config is the command line.
type config struct {
	nodeName, namespace, backend, simulate, kubeconfig string
	execution, podResources, draDriver, draDomain      string
	metricsAddr, probeAddr                             string
	shutdownGrace                                      time.Duration
	showVersion                                        bool
	log                                                logging.Options
	results                                            string
	gpuLabels                                          gpulabels.Names
}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.StringVar(&c.nodeName, "node-name", os.Getenv("NODE_NAME"), "name of this node (default $NODE_NAME)")
	fs.StringVar(&c.namespace, "namespace", "kquant-system", "namespace of the agent's Lease")
	fs.StringVar(&c.backend, "backend", nodeagent.BackendAuto, "how runs execute: auto, cuda or reference")
	fs.StringVar(&c.execution, "execution", nodeagent.ExecutionRunPod, "where runs execute: RunPod (each in its own run pod, the agent only observes and creates no CUDA context) or None (in the agent, only for nodes drained of other GPU work)")
	fs.StringVar(&c.podResources, "pod-resources-socket", "", `the kubelet's PodResources socket whose GPU allocations the profile publishes; "none" reads none (default `+podresources.DefaultSocket+`, or none with --simulate)`)
	fs.StringVar(&c.draDriver, "dra-driver", podresources.DefaultDRADriver, "the DRA driver whose devices are GPUs")
	fs.StringVar(&c.draDomain, "dra-uuid-attribute-domain", "", "the domain of the uuid attribute of the DRA driver's devices (default: the driver's name)")
	fs.StringVar(&c.simulate, "simulate", "", "simulate GPUs instead of using NVML, as <product>:<count>[,...]; products: "+fmt.Sprint(simulate.Keys()))
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster, $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&c.metricsAddr, "metrics-bind-address", "", `metrics address; "0" disables (default ":8080", or "0" with --simulate so that many agents fit on one machine)`)
	fs.StringVar(&c.probeAddr, "health-probe-bind-address", "", `health probe address; "0" disables (default ":8081", or "0" with --simulate)`)
	fs.DurationVar(&c.shutdownGrace, "shutdown-grace", nodeagent.DefaultShutdownGrace, "how long running runs may take to finish on shutdown")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	gpulabels.RegisterFlags(fs, &c.gpuLabels)
	c.log.AddFlags(fs)
	fs.StringVar(&c.results, "results", resultsMeasured, "measured (run every step on the backend) or synthetic (made-up deterministic results, for scale tests only)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	defaultAddr := func(v *string, addr string) {
		if *v != "" {
			return
		}
		*v = addr
		if c.simulate != "" {
			*v = "0"
		}
	}
	defaultAddr(&c.metricsAddr, ":8080")
	defaultAddr(&c.probeAddr, ":8081")
	switch {
	case c.podResources == "none":
		c.podResources = ""
	case c.podResources == "" && c.simulate == "":
		c.podResources = podresources.DefaultSocket
	}
	return c, nil
}

func main() {
	start := time.Now()
	if len(os.Args) > 1 && os.Args[1] == "preflight" {
		os.Exit(preflightMode(os.Args[2:], start))
	}
	if len(os.Args) > 1 && os.Args[1] == "run" {
		if err := runPod(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "agent run:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

// parsed runs a command's flag parser; ok is false when the command has
// nothing more to do: an error, or --help (which is no error).
func parsed[C any](args []string, parse func([]string) (C, error)) (c C, ok bool, err error) {
	c, err = parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return c, false, nil
	}
	return c, err == nil, err
}

func run(args []string) error {
	c, ok, err := parsed(args, parseFlags)
	if !ok {
		return err
	}
	if c.showVersion {
		fmt.Println(version.String("agent"))
		return nil
	}
	log, err := processLogger(c.log)
	if err != nil {
		return err
	}

	opts := nodeagent.Options{
		NodeName:               c.nodeName,
		Namespace:              c.namespace,
		AgentID:                fmt.Sprintf("%s-%d-%d", c.nodeName, time.Now().Unix(), os.Getpid()),
		AgentVersion:           version.Version,
		Backend:                c.backend,
		Execution:              c.execution,
		PodResourcesSocket:     c.podResources,
		DRADriver:              c.draDriver,
		DRAAttributeDomain:     c.draDomain,
		Registerer:             ctrlmetrics.Registry,
		GPULabels:              c.gpuLabels,
		MetricsBindAddress:     c.metricsAddr,
		HealthProbeBindAddress: c.probeAddr,
		ShutdownGrace:          c.shutdownGrace,
	}
	if c.simulate != "" {
		if opts.Simulate, err = simulate.Parse(c.simulate); err != nil {
			return err
		}
	}
	if c.execution == nodeagent.ExecutionNone {
		// Only in-agent execution opens CUDA; an observer never does.
		exec, err := newExecution(logging.IntoContext(context.Background(), log), c.results, c.backend, opts.Simulate != nil)
		if err != nil {
			return err
		}
		defer exec.release(log)
		opts.Runner, opts.Prober, opts.Open = exec.runner, exec.prober, exec.open
	}
	cfg, err := restConfig(c.kubeconfig)
	if err != nil {
		return err
	}

	ctx, kill := context.WithCancel(logging.IntoContext(context.Background(), log))
	defer kill()
	shutdown := make(chan struct{})
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		log.Info("Signal received, shutting down gracefully")
		close(shutdown)
		<-signals
		log.Info("Second signal received, stopping now")
		kill()
	}()
	return nodeagent.Run(ctx, cfg, opts, shutdown)
}

// processLogger is the process's logger, which controller-runtime and
// client-go (klog) log through too.
func processLogger(opts logging.Options) (logr.Logger, error) {
	log, err := opts.New(os.Stderr)
	if err != nil {
		return logr.Logger{}, err
	}
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	return log, nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("finding the API server: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}
