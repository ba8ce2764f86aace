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
	"strings"
	"syscall"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kquant/kquant/agent/gpuguard"
	"github.com/kquant/kquant/agent/nodeagent"
	"github.com/kquant/kquant/agent/runmode"
	"github.com/kquant/kquant/agent/simulate"
	kquantscheme "github.com/kquant/kquant/api/scheme"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/runpod"
	"github.com/kquant/kquant/internal/bench"
	"github.com/kquant/kquant/internal/logging"
	"github.com/kquant/kquant/internal/runoutcome"
)

// runConfig is the command line of run mode.
type runConfig struct {
	run, kubeconfig, backend, simulate, allocation, terminationLog string
	guardInterval                                                  time.Duration
	exitOnSIGTERM                                                  bool
	pod                                                            runmode.Pod
	log                                                            logging.Options
}

// exitSIGTERM is the exit code of a process that SIGTERM ended (128+15),
// for a run pod that exits at once on it.
const exitSIGTERM = 143

// DefaultTerminationLog is where the kubelet reads a container's
// termination message.
const defaultTerminationLog = "/dev/termination-log"

func parseRunFlags(args []string) (*runConfig, error) {
	c := &runConfig{pod: runmode.Pod{
		Namespace: os.Getenv("POD_NAMESPACE"), Name: os.Getenv("POD_NAME"),
		UID: types.UID(os.Getenv("POD_UID")), Node: os.Getenv("NODE_NAME"),
	}}
	fs := flag.NewFlagSet("agent run", flag.ContinueOnError)
	fs.StringVar(&c.run, "run", "", "the QuantRun to execute, as <namespace>/<name> (required)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster, $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&c.backend, "backend", nodeagent.BackendAuto, "auto, cuda or reference")
	fs.StringVar(&c.simulate, "simulate", "", "simulate the node's GPUs as <product>:<count>[,...]; the run pod sees the run's GPU alone (tests, no kubelet)")
	fs.StringVar(&c.allocation, "allocation", string(v1alpha1.AllocationSourceDevicePlugin), "how the kubelet allocated the GPU: DevicePlugin or DRA (recorded in status.allocatedGPU.source)")
	fs.StringVar(&c.terminationLog, "termination-log", defaultTerminationLog, `file for the termination message (the run's outcome, see internal/runoutcome); empty writes none`)
	fs.BoolVar(&c.exitOnSIGTERM, strings.TrimPrefix(runpod.ArgExitOnSIGTERM, "--"), false,
		"exit at once on SIGTERM, without recording the run (idle validations: the manager records them from the pod)")
	fs.DurationVar(&c.guardInterval, "guard-interval", gpuguard.DefaultInterval, "how often the GPU is checked for other processes while the run executes")
	c.log.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	ns, name, ok := strings.Cut(c.run, "/")
	if !ok || ns == "" || name == "" {
		return nil, fmt.Errorf("--run %q: want <namespace>/<name>", c.run)
	}
	switch v1alpha1.AllocationSource(c.allocation) {
	case v1alpha1.AllocationSourceDevicePlugin, v1alpha1.AllocationSourceDRA:
	default:
		return nil, fmt.Errorf("--allocation %q: want DevicePlugin or DRA", c.allocation)
	}
	if c.pod.Name == "" {
		// Outside a pod (the device script, tests): a stable stand-in.
		host, _ := os.Hostname()
		c.pod.Name, c.pod.UID = name, types.UID(fmt.Sprintf("%s-%d", host, os.Getpid()))
	}
	return c, nil
}

// runPod is run mode: one process executes one QuantRun and exits 0 when
// the run finished (any verdict), 1 when it could not run. SIGTERM records
// the run as Failed (RunPodLost, retried) before exiting.
func runPod(args []string) error {
	c, ok, err := parsed(args, parseRunFlags)
	if !ok {
		return err
	}
	log, err := processLogger(c.log)
	if err != nil {
		return err
	}
	return executeRun(c, log)
}

// executeRun is run mode after the process-wide setup: it executes the run
// and handles SIGTERM and SIGINT while it does.
func executeRun(c *runConfig, log logr.Logger) (exitErr error) {
	var outcome string
	defer func() {
		// Whatever stopped the run, the kubelet shows why: the run's
		// outcome when it ended here, else the error.
		switch {
		case outcome != "":
			writeTerminationLog(c.terminationLog, outcome)
		case exitErr != nil:
			writeTerminationLog(c.terminationLog, exitErr.Error())
		}
	}()

	ctx, cancel := context.WithCancelCause(logging.IntoContext(context.Background(), log))
	defer cancel(nil)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)
	go func() {
		if _, ok := <-signals; ok {
			if c.exitOnSIGTERM {
				// Whoever preempted this pod waits for its exit; the
				// manager records the run from the pod.
				log.Info("Signal received, exiting at once")
				writeTerminationLog(c.terminationLog, runmode.ErrTerminated.Error())
				os.Exit(exitSIGTERM)
			}
			log.Info("Signal received, stopping the run")
			cancel(runmode.ErrTerminated)
		}
	}()

	exec, err := newExecution(ctx, resultsMeasured, c.backend, c.simulate != "")
	if err != nil {
		return err
	}
	defer exec.release(log)
	if exec.bench != nil {
		exec.bench.Progress = progressLogger(log)
	}
	lib, err := nvmlFor(c)
	if err != nil {
		return err
	}
	cfg, err := restConfig(c.kubeconfig)
	if err != nil {
		return err
	}
	cl, err := kquantscheme.NewClient(cfg)
	if err != nil {
		return err
	}
	ns, name, _ := strings.Cut(c.run, "/")
	out, err := runmode.Execute(ctx, runmode.Options{
		Run: types.NamespacedName{Namespace: ns, Name: name}, Pod: c.pod, Client: cl, NVML: lib,
		Source: v1alpha1.AllocationSource(c.allocation), Runner: exec.runner, Open: exec.open,
		GuardInterval: c.guardInterval,
		Baselines: func(ctx context.Context, gpu v1alpha1.GPU) (*v1alpha1.Baselines, error) {
			m, err := exec.prober.Measure(ctx, int(gpu.Index))
			return m.API(), err
		},
	})
	if out.Phase.IsTerminal() || err == nil {
		// A run's end is written whether or not its status write landed:
		// if it did not, the manager records the run from it
		// (runpod.PodOutcome).
		outcome = out.TerminationMessage()
	}
	if err != nil {
		return err
	}
	if out.Phase == v1alpha1.RunPhaseFailed {
		return errors.New(runoutcome.Summary(out.Reason, out.Message))
	}
	return nil
}

// envSimulatedGPUs is where the local cluster's test device plugin and test
// DRA driver tell a simulated run pod which GPUs it was given (their UUIDs,
// comma-separated).
const envSimulatedGPUs = "KQUANT_SIMULATED_GPUS"

// nvmlFor is the NVML the run pod sees: the driver's, or with --simulate the
// simulated node's GPUs that $KQUANT_SIMULATED_GPUS names (the run's bound
// GPU where no kubelet set it), as the kubelet would hand them out.
func nvmlFor(c *runConfig) (func(*v1alpha1.QuantRun) gonvml.Interface, error) {
	if c.simulate == "" {
		return func(*v1alpha1.QuantRun) gonvml.Interface { return gonvml.New() }, nil
	}
	spec, err := simulate.Parse(c.simulate)
	if err != nil {
		return nil, err
	}
	return func(run *v1alpha1.QuantRun) gonvml.Interface {
		given := []string{run.Spec.GPUUUID}
		if v := os.Getenv(envSimulatedGPUs); v != "" {
			given = strings.Split(v, ",")
		}
		node := simulate.NewNode(run.Spec.NodeName, spec)
		if only, ok := node.Only(given...); ok {
			return only.Library()
		}
		return simulate.NewNode(run.Spec.NodeName, nil).Library()
	}, nil
}

// writeTerminationLog writes msg where the kubelet reads it; best effort
// (outside a pod the file may not exist).
func writeTerminationLog(path, msg string) {
	if path == "" {
		return
	}
	_ = os.WriteFile(path, []byte(msg), 0o644)
}

// progressLogger logs a run's progress for `kubectl logs`: each stage of
// each shape, and the timing loop in tenths.
func progressLogger(log logr.Logger) func(*v1alpha1.QuantRun, bench.Progress) {
	var last bench.Progress
	tenth := func(p bench.Progress) int {
		if p.Steps == 0 {
			return 0
		}
		return p.Step * 10 / p.Steps
	}
	return func(_ *v1alpha1.QuantRun, p bench.Progress) {
		if p.Shape == last.Shape && p.Stage == last.Stage && tenth(p) == tenth(last) && last.Stage != "" {
			return
		}
		last = p
		log.Info("Progress", "shape", p.Shape+1, "shapes", p.Shapes, "rows", p.Rows, "cols", p.Cols,
			"stage", p.Stage, "step", p.Step, "steps", p.Steps)
	}
}
