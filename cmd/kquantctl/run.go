// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/internal/bench"
	"github.com/kquant/kquant/internal/bench/dump"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
)

// runOptions are the flags of run.
type runOptions struct {
	files       []string
	recipe      string
	recursive   bool
	backend     string
	output      string
	dumpDir     string
	failOn      string
	maxElements int64
	iterations  int32
	warmup      int32
}

func (a *app) runCommand() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run -f RECIPES -f JOB.yaml [flags]",
		Short: "Run a QuantJob locally: on this machine's GPU or the pure-Go reference backend",
		Long: `run reads QuantRecipes and one QuantJob from files, directories (-R recurses)
or stdin (-f -), and runs the job's recipe (spec.recipeRef) with the engine,
without a cluster. It exits 3 when the verdict is at least as bad as --fail-on,
2 on bad flags or manifests (naming the file and the field, before anything
runs), 1 when it could not run.`,
		Example: a.examples(`
# The job's recipe (spec.recipeRef) from a file
{name} run -f recipes/mxfp8.yaml -f config/samples/validation-quantize.yaml

# The whole catalog; --recipe picks another recipe than the job's
{name} run -f recipes/ --recipe nvfp4 -f config/samples/validation-quantize.yaml --fail-on never

# Every manifest under a directory, JSON out, the tensors dumped as .npy
{name} run -f manifests/ -R -o json --dump-dir /tmp/dump

# From stdin
cat job.yaml | {name} run -f recipes/ -f -`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.run(cmd, &o) },
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&o.files, "filename", "f", nil, "a manifest file, a directory of them, or - for stdin (repeatable); QuantRecipes and one QuantJob")
	fs.StringVar(&o.recipe, "recipe", "", "run this QuantRecipe instead of the one the job's spec.recipeRef names")
	fs.BoolVarP(&o.recursive, "recursive", "R", false, "process the directories of -f recursively")
	oneOf(fs, cmd, &o.backend, "backend", "", "auto", "auto (cuda when a CUDA driver is present, else reference), reference or cuda", "auto", "reference", "cuda")
	oneOf(fs, cmd, &o.output, "output", "o", "table", "table or json (shaped like QuantRun.status.results)", "table", "json")
	oneOf(fs, cmd, &o.failOn, "fail-on", "", "fail", "exit 3 on this verdict or worse: fail, warn or never", "fail", "warn", "never")
	fs.StringVar(&o.dumpDir, "dump-dir", "", "write each shape's input, codes, scales and dequantized tensor as .npy files under this directory")
	fs.Int64Var(&o.maxElements, "max-elements", bench.DefaultMaxElements, "refuse shapes with more elements than this (host memory guard)")
	fs.Int32Var(&o.iterations, "iterations", 0, "timed steps per shape, overriding the job's execution and level (0: the job's)")
	fs.Int32Var(&o.warmup, "warmup", -1, "untimed steps per shape, overriding the job's execution and level (-1: the job's)")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}

func (a *app) run(cmd *cobra.Command, o *runOptions) error {
	ctx := cmd.Context()
	if o.output != "table" && o.output != "json" {
		return usagef("-o %q: want table or json", o.output)
	}
	if o.failOn != "fail" && o.failOn != "warn" && o.failOn != "never" {
		return usagef("--fail-on %q: want fail, warn or never", o.failOn)
	}
	if len(o.files) == 0 {
		return usagef("no manifests; use -f RECIPE.yaml -f JOB.yaml (or -f recipes/ -f JOB.yaml)")
	}
	docs, err := readManifests(o.files, o.recursive, a.stdin)
	if err != nil {
		return err
	}
	m, err := decodeManifests(ctx, docs, o.recipe)
	if err != nil {
		return err
	}
	// Overrides go into the job before validation, so that their bounds
	// are checked as the job's own would be.
	if cmd.Flags().Changed("iterations") {
		m.job.Spec.Execution.Iterations = &o.iterations
	}
	if cmd.Flags().Changed("warmup") {
		m.job.Spec.Execution.Warmup = &o.warmup
	}
	spec := m.spec()
	if err := spec.Validate(); err != nil {
		return usageError{fmt.Errorf("with the flags' overrides: %w", err)}
	}
	e := &bench.Engine{MaxElements: o.maxElements}
	// Refused before a backend opens: a shape over the host memory guard is
	// the job's or the flag's to change.
	if err := e.CheckLimits(spec.Workload); err != nil {
		return usageError{fmt.Errorf("%s: %w; --max-elements sets the limit", m.jobSource, err)}
	}
	backend, err := a.selectBackend(ctx, o.backend)
	if err != nil {
		return err
	}
	e.Backend = backend
	var prog *progressBar
	if a.stderrIsTerminal {
		prog = &progressBar{w: a.stderr}
		e.Progress = prog.update
	}
	if o.dumpDir != "" {
		w, err := dump.New(o.dumpDir)
		if err != nil {
			return err
		}
		e.Observer = w
	}
	rep, err := e.Run(ctx, spec)
	prog.clear()
	if err != nil {
		if errors.Is(err, bench.ErrInvalidSpec) {
			return usageError{err}
		}
		return err
	}
	if o.output == "json" {
		err = writeJSON(a.stdout, &rep.Results)
	} else {
		var g *gpuDescription
		if rep.Results.Backend == string(v1alpha1.BackendCUDA) {
			if d, derr := a.gpuInfo(ctx, backend); derr == nil {
				g = &d
			} else {
				fmt.Fprintf(a.stderr, "%s: note: cannot name the GPU: %v\n", a.name, derr)
			}
		}
		err = writeTable(a.stdout, m, spec, rep, g)
	}
	if err != nil {
		return err
	}
	return failOn(o.failOn, rep.Results.Verdict, rep.Results.Reason)
}

// failOn is a verdictError when v is at least as bad as the --fail-on level.
func failOn(level string, v v1alpha1.Verdict, reason string) error {
	bad := v == v1alpha1.VerdictFail && level != "never" || v == v1alpha1.VerdictWarn && level == "warn"
	if bad {
		return verdictError{verdict: string(v), reason: reason}
	}
	return nil
}

// selectBackend opens the backend the --backend flag names.
func (a *app) selectBackend(ctx context.Context, name string) (quant.Backend, error) {
	switch name {
	case "reference":
		return reference.New(), nil
	case "cuda":
		if ok, why := a.cudaAvailable(); !ok {
			return nil, fmt.Errorf("--backend cuda: %s", why)
		}
		b, err := a.openCUDA(ctx)
		if err != nil {
			return nil, fmt.Errorf("--backend cuda: %w", err)
		}
		return b, nil
	case "auto":
		if ok, _ := a.cudaAvailable(); !ok {
			return reference.New(), nil
		}
		b, err := a.openCUDA(ctx)
		if err != nil {
			fmt.Fprintf(a.stderr, "%s: note: a CUDA driver is present but %v; using the reference backend\n", a.name, err)
			return reference.New(), nil
		}
		return b, nil
	default:
		return nil, usagef("--backend %q: want auto, reference or cuda", name)
	}
}
