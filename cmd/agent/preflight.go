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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/agent/nodeagent"
	"github.com/kquant/kquant/agent/preflight"
	"github.com/kquant/kquant/agent/simulate"
	kquantscheme "github.com/kquant/kquant/api/scheme"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/config/catalog"
	"github.com/kquant/kquant/internal/logging"
	"github.com/kquant/kquant/internal/runoutcome"
)

// Exit codes of preflight mode, NVSentinel's contract for preflight checks:
// 0 passed, 1 the check failed, 2 the check is misconfigured.
const (
	exitPreflightFailed = 1
	exitPreflightConfig = 2
)

// reasonConfigError is the termination message's reason when the preflight
// could not start: its flags, its recipe file or a recipe name.
const reasonConfigError = "ConfigError"

// preflightConfig is the command line of preflight mode.
type preflightConfig struct {
	recipes                                                       []string
	recipeFile, level, backend, simulate, kubeconfig, termination string
	offline                                                       bool
	pod                                                           preflight.Pod
	log                                                           logging.Options
}

func parsePreflightFlags(args []string) (*preflightConfig, error) {
	c := &preflightConfig{pod: preflight.Pod{
		Namespace: os.Getenv("POD_NAMESPACE"), Name: os.Getenv("POD_NAME"),
		UID: types.UID(os.Getenv("POD_UID")), Node: os.Getenv("NODE_NAME"),
	}}
	var recipes string
	fs := flag.NewFlagSet("agent preflight", flag.ContinueOnError)
	fs.StringVar(&recipes, "recipes", "", "the recipes to validate, comma-separated names (required): from --recipe-file, else the cluster's ClusterQuantRecipes, else the built-in catalog")
	fs.StringVar(&c.recipeFile, "recipe-file", "", "a YAML file of QuantRecipes or ClusterQuantRecipes, and at most one QuantJob whose mode, level, workload, execution and tolerances replace the defaults")
	fs.StringVar(&c.level, "level", "", "Quick, Standard or Extended (default: the file's QuantJob's, else Quick)")
	fs.StringVar(&c.backend, "backend", nodeagent.BackendAuto, "auto, cuda or reference")
	fs.StringVar(&c.simulate, "simulate", "", "simulate the node's GPUs as <product>:<count>[,...]; the container sees those $KQUANT_SIMULATED_GPUS names (tests, no GPU)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster, $KUBECONFIG or ~/.kube/config)")
	fs.BoolVar(&c.offline, "offline", false, "use no API server: no catalog, no QuantRuns, no Events")
	fs.StringVar(&c.termination, "termination-log", defaultTerminationLog, "file for the termination message (the verdict); empty writes none")
	c.log.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for _, r := range strings.Split(recipes, ",") {
		if r = strings.TrimSpace(r); r != "" {
			c.recipes = append(c.recipes, r)
		}
	}
	// Past parsing, c is returned with the error: its termination log is
	// where the error goes.
	if len(c.recipes) == 0 {
		return c, errors.New("--recipes: name at least one recipe")
	}
	if c.simulate != "" && c.pod.Node == "" {
		return c, errors.New("--simulate needs $NODE_NAME: simulated GPUs are named after their node")
	}
	return c, nil
}

// preflightMode is preflight mode; its exit code follows NVSentinel's
// contract.
func preflightMode(args []string, start time.Time) int {
	c, err := parsePreflightFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent preflight:", err)
		termination := defaultTerminationLog
		if c != nil {
			termination = c.termination
		}
		writeTerminationLog(termination, runoutcome.Summary(reasonConfigError, err.Error()))
		return exitPreflightConfig
	}
	log, err := processLogger(c.log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent preflight:", err)
		return exitPreflightConfig
	}
	out, err := runPreflight(c, log, start)
	switch {
	case errors.Is(err, preflight.ErrConfig):
		log.Error(err, "Preflight misconfigured")
		writeTerminationLog(c.termination, runoutcome.Summary(reasonConfigError, err.Error()))
		return exitPreflightConfig
	case err != nil:
		log.Error(err, "Preflight could not run")
		writeTerminationLog(c.termination, runoutcome.Summary(preflight.ReasonCheckError, err.Error()))
		return exitPreflightFailed
	}
	writeTerminationLog(c.termination, out.TerminationMessage())
	log.Info("Exiting", "verdict", out.Verdict, "secondsSinceStart", fmt.Sprintf("%.3f", time.Since(start).Seconds()))
	if out.Failed() {
		return exitPreflightFailed
	}
	return 0
}

// runPreflight resolves the recipes and settings, opens the backend and
// NVML, and runs the checks. An ErrConfig error is the caller's
// misconfiguration.
func runPreflight(c *preflightConfig, log logr.Logger, start time.Time) (preflight.Outcome, error) {
	ctx, cancel := context.WithCancel(logging.IntoContext(context.Background(), log))
	defer cancel()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)
	go func() {
		if _, ok := <-signals; ok {
			log.Info("Signal received, stopping the preflight")
			cancel()
		}
	}()
	since := func() string { return fmt.Sprintf("%.3f", time.Since(start).Seconds()) }

	var file *preflight.File
	if c.recipeFile != "" {
		f, err := os.Open(c.recipeFile)
		if err != nil {
			return preflight.Outcome{}, fmt.Errorf("%w: %w", preflight.ErrConfig, err)
		}
		file, err = preflight.ReadFile(c.recipeFile, f)
		_ = f.Close()
		if err != nil {
			return preflight.Outcome{}, err
		}
	}
	builtIn, err := preflight.ReadFile(catalog.Name, strings.NewReader(string(catalog.YAML())))
	if err != nil {
		return preflight.Outcome{}, fmt.Errorf("reading %s: %w", catalog.Name, err)
	}
	cl := apiClient(c, log)
	recipes, err := preflight.Resolve(ctx, c.recipes, file, builtIn, catalogReader(cl), func(name string, err error) {
		log.V(logging.Debug).Info("Cannot read the cluster's catalog, using the built-in one", "recipe", name, "reason", err.Error())
	})
	if err != nil {
		return preflight.Outcome{}, err
	}
	var job *v1alpha1.QuantJob
	if file != nil {
		job = file.Job
	}
	settings, err := preflight.SettingsFor(job, v1alpha1.Level(c.level))
	if err != nil {
		return preflight.Outcome{}, err
	}
	if err := settings.Validate(recipes); err != nil {
		return preflight.Outcome{}, err
	}
	for _, r := range recipes {
		log.Info("Recipe resolved", "recipe", r.Name, "source", r.Source, "key", r.Spec.Key())
	}

	exec, err := newExecution(ctx, resultsMeasured, c.backend, c.simulate != "")
	if err != nil {
		return preflight.Outcome{}, err
	}
	defer exec.release(log)
	log.Info("Backend ready", "secondsSinceStart", since())
	lib, err := preflightNVML(c)
	if err != nil {
		return preflight.Outcome{}, err
	}
	opts := preflight.Options{
		Recipes: recipes, Settings: settings, NVML: lib, Runner: exec.runner, Open: exec.open, Pod: c.pod,
	}
	if cl != nil {
		opts.Recorder = &preflight.Recorder{Client: cl}
	}
	return preflight.Run(ctx, opts), nil
}

// apiClient is a client with the pod's service account, or nil when there
// is no API server to talk to (--offline, no in-cluster config): the
// preflight then uses the built-in catalog and records nothing.
func apiClient(c *preflightConfig, log logr.Logger) client.Client {
	if c.offline {
		return nil
	}
	cfg, err := restConfig(c.kubeconfig)
	if err == nil {
		var cl client.Client
		if cl, err = kquantscheme.NewClient(cfg); err == nil {
			return cl
		}
	}
	log.Info("No API server, using the built-in catalog and recording nothing", "reason", err.Error())
	return nil
}

// catalogReader reads the cluster's ClusterQuantRecipes through cl; nil
// without a client.
func catalogReader(cl client.Client) preflight.CatalogReader {
	if cl == nil {
		return nil
	}
	return func(ctx context.Context, name string) (*v1alpha1.QuantRecipeSpec, bool, error) {
		r := &v1alpha1.ClusterQuantRecipe{}
		err := cl.Get(ctx, client.ObjectKey{Name: name}, r)
		switch {
		case apierrors.IsNotFound(err):
			return nil, false, nil
		case err != nil:
			return nil, false, fmt.Errorf("reading ClusterQuantRecipe %s: %w", name, err)
		}
		return &r.Spec, true, nil
	}
}

// preflightNVML is the NVML the container sees: the driver's, or with
// --simulate the simulated node's GPUs that $KQUANT_SIMULATED_GPUS names
// (all of them where nothing set it), as the kubelet would hand them out.
func preflightNVML(c *preflightConfig) (gonvml.Interface, error) {
	if c.simulate == "" {
		return gonvml.New(), nil
	}
	spec, err := simulate.Parse(c.simulate)
	if err != nil {
		return nil, fmt.Errorf("%w: --simulate: %w", preflight.ErrConfig, err)
	}
	node := simulate.NewNode(c.pod.Node, spec)
	v := os.Getenv(envSimulatedGPUs)
	if v == "" {
		return node.Library(), nil
	}
	only, ok := node.Only(strings.Split(v, ",")...)
	if !ok {
		return nil, fmt.Errorf("$%s=%s names GPUs that node %s does not simulate", envSimulatedGPUs, v, c.pod.Node)
	}
	return only.Library(), nil
}
