package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kquant/kquant/cmd/internal/version"
	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/gpu"
	"github.com/kquant/kquant/internal/quant"
)

// Exit codes. Usage covers everything the user can fix in the command line
// or the manifests; a run that completes exits 0 whatever its verdict (the
// verdict is in the output), so that scripts can tell "the recipe failed
// its tolerance" from "kquantctl could not run".
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// app is kquantctl with its dependencies injected, so that tests run the
// real command in-process with their own streams and a fake or absent GPU.
type app struct {
	stdout, stderr io.Writer
	// stderrIsTerminal enables the progress line.
	stderrIsTerminal bool
	// cudaAvailable reports whether a CUDA driver can be opened, and why not.
	cudaAvailable func() (bool, string)
	// openCUDA returns the CUDA quant.Backend of device 0.
	openCUDA func(ctx context.Context) (quant.Backend, error)
}

func newApp(stdout, stderr io.Writer, stderrIsTerminal bool) *app {
	return &app{
		stdout: stdout, stderr: stderr, stderrIsTerminal: stderrIsTerminal,
		cudaAvailable: cuda.Available,
		openCUDA:      openCUDABackend,
	}
}

// errNoCUDABackend says that a kquantctl has no CUDA backend; the tests
// use it for an app whose CUDA backend fails to open.
var errNoCUDABackend = errors.New("this kquantctl has no CUDA quantization backend")

// openCUDABackend is the one place where kquantctl creates the CUDA
// backend: internal/gpu on device 0. The driver is present when this is
// called.
func openCUDABackend(ctx context.Context) (quant.Backend, error) {
	b, err := gpu.New(ctx)
	if err != nil {
		// Not b: a nil *gpu.Backend would be a non-nil quant.Backend.
		return nil, err
	}
	return b, nil
}

// usageError marks errors that exit with exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

const usage = `kquantctl runs kquant's quantization engine without a cluster.

Usage:
  kquantctl run -f RECIPE.yaml -f JOB.yaml [--backend auto|reference|cuda] [-o table|json] [--dump-dir DIR]
  kquantctl version

Run "kquantctl run --help" for the flags of run.
`

func (a *app) main(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "version", "--version":
		fmt.Fprintln(a.stdout, version.String("kquantctl"))
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(a.stdout, usage)
		return exitOK
	case "run":
		err = a.run(ctx, args[1:])
	default:
		fmt.Fprintf(a.stderr, "kquantctl: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(a.stderr, "kquantctl: %v\n", err)
		return exitUsage
	default:
		fmt.Fprintf(a.stderr, "kquantctl: %v\n", err)
		return exitError
	}
}
