package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/kquant/kquant/internal/bench"
	"github.com/kquant/kquant/internal/bench/dump"
	"github.com/kquant/kquant/internal/quant"
	"github.com/kquant/kquant/internal/quant/reference"
)

// errHelp ends a command that printed its help.
var errHelp = errors.New("help requested")

// runOptions are the flags of kquantctl run.
type runOptions struct {
	files       []string
	backend     string
	output      string
	dumpDir     string
	maxElements int64
	iterations  int32
	warmup      int32
}

func (a *app) run(ctx context.Context, args []string) error {
	var o runOptions
	fs := pflag.NewFlagSet("kquantctl run", pflag.ContinueOnError)
	fs.SetOutput(a.stderr)
	fs.StringArrayVarP(&o.files, "filename", "f", nil, "a QuantRecipe or QuantJob manifest (repeatable; - reads stdin); one of each is needed")
	fs.StringVar(&o.backend, "backend", "auto", "auto (cuda when a CUDA driver is present, else reference), reference or cuda")
	fs.StringVarP(&o.output, "output", "o", "table", "table or json (shaped like QuantRun.status.results)")
	fs.StringVar(&o.dumpDir, "dump-dir", "", "write each shape's input, codes, scales and dequantized tensor as .npy files under this directory")
	fs.Int64Var(&o.maxElements, "max-elements", bench.DefaultMaxElements, "refuse shapes with more elements than this (host memory guard)")
	fs.Int32Var(&o.iterations, "iterations", 0, "timed steps per shape, overriding the job's execution and level (0: the job's)")
	fs.Int32Var(&o.warmup, "warmup", -1, "untimed steps per shape, overriding the job's execution and level (-1: the job's)")
	fs.Usage = func() {
		fmt.Fprintf(a.stderr, "Usage: kquantctl run -f RECIPE.yaml -f JOB.yaml [flags]\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("run takes no arguments, got %q (manifests go with -f)", fs.Args())
	}
	if o.output != "table" && o.output != "json" {
		return usagef("-o %q: want table or json", o.output)
	}
	if len(o.files) == 0 {
		return usagef("no manifests; use -f RECIPE.yaml -f JOB.yaml")
	}
	docs, err := readManifests(o.files, func() ([]byte, error) { return io.ReadAll(os.Stdin) })
	if err != nil {
		return err
	}
	m, err := decodeManifests(docs)
	if err != nil {
		return err
	}
	if ref := m.job.Spec.RecipeRef.Name; ref != "" && ref != m.recipe.Name {
		// kquantctl runs the recipe it is given: trying one job with every
		// recipe is the point of a local run. Say so, since the cluster would not.
		fmt.Fprintf(a.stderr, "kquantctl: note: %s refers to recipe %q; running %q from %s\n", m.jobSource, ref, m.recipe.Name, m.recipeSource)
	}
	// Overrides go into the job before validation, so that their bounds
	// are checked as the job's own would be.
	if fs.Changed("iterations") {
		m.job.Spec.Execution.Iterations = &o.iterations
	}
	if fs.Changed("warmup") {
		m.job.Spec.Execution.Warmup = &o.warmup
	}
	spec := m.spec()
	if err := spec.Validate(); err != nil {
		return usageError{fmt.Errorf("with the flags' overrides: %w", err)}
	}
	backend, err := a.selectBackend(ctx, o.backend)
	if err != nil {
		return err
	}
	e := &bench.Engine{Backend: backend, MaxElements: o.maxElements}
	var prog *progressLine
	if a.stderrIsTerminal {
		prog = &progressLine{w: a.stderr}
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
		return writeJSON(a.stdout, &rep.Results)
	}
	return writeTable(a.stdout, m, spec, rep)
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
			fmt.Fprintf(a.stderr, "kquantctl: note: a CUDA driver is present but %v; using the reference backend\n", err)
			return reference.New(), nil
		}
		return b, nil
	default:
		return nil, usagef("--backend %q: want auto, reference or cuda", name)
	}
}
