// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/kquant/kquant/internal/cuda"
	"github.com/kquant/kquant/internal/gpu"
	"github.com/kquant/kquant/internal/quant"
)

// Exit codes. Usage covers everything the user can fix in the command line
// or the manifests; a local run whose verdict is at least as bad as
// --fail-on (Fail by default) exits exitVerdict, so that scripts can tell
// "the recipe failed its tolerance" (3) from "kquantctl could not run" (1).
const (
	exitOK      = 0
	exitError   = 1
	exitUsage   = 2
	exitVerdict = 3
)

// app is the program with its dependencies injected, so that tests run the
// real command in-process with their own streams and a fake or absent GPU.
type app struct {
	// name is how the program was called: "kquantctl" or "kubectl kquant".
	name           string
	stdout, stderr io.Writer
	stdin          io.Reader
	// stderrIsTerminal enables the progress bar.
	stderrIsTerminal bool
	// cudaAvailable reports whether a CUDA driver can be opened, and why not.
	cudaAvailable func() (bool, string)
	// openCUDA returns the CUDA quant.Backend of device 0.
	openCUDA func(ctx context.Context) (quant.Backend, error)
	// gpuInfo describes the GPU the CUDA backend runs on.
	gpuInfo func(ctx context.Context, b quant.Backend) (gpuDescription, error)
	// config are the kubeconfig flags of the cluster commands.
	config *genericclioptions.ConfigFlags
}

func newApp(name string, stdout, stderr io.Writer, stdin io.Reader, stderrIsTerminal bool) *app {
	return &app{
		name: name, stdout: stdout, stderr: stderr, stdin: stdin, stderrIsTerminal: stderrIsTerminal,
		cudaAvailable: cuda.Available,
		openCUDA:      openCUDABackend,
		gpuInfo:       describeGPU,
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

// gpuDescription names the GPU a local run used.
type gpuDescription struct {
	Product, UUID, Driver, CUDA string
}

// describeGPU names the device the CUDA backend b runs on: the CUDA driver
// says the model, UUID and CUDA version, the kernel module its driver version.
// (Not NVML: go-nvml leaves its symbols unresolved until the library is
// loaded, and the kubeconfig flags link the plugin package, which makes the
// binary bind every symbol at start.)
func describeGPU(_ context.Context, b quant.Backend) (gpuDescription, error) {
	gb, ok := b.(*gpu.Backend)
	if !ok {
		return gpuDescription{}, errors.New("not the CUDA backend")
	}
	info := gb.Device().Info()
	d := gpuDescription{Product: info.Name, UUID: info.UUID, Driver: "unknown"}
	if drv, err := cuda.Open(); err == nil {
		d.CUDA = drv.VersionString()
	}
	if v, err := os.ReadFile("/proc/driver/nvidia/version"); err == nil {
		d.Driver = kernelModuleVersion(string(v))
	}
	return d, nil
}

// kernelModuleVersion is the version in /proc/driver/nvidia/version's first
// line: the first word after "Kernel Module" that is a dotted number, for the
// proprietary module ("... x86_64 Kernel Module  580.65.06  ...") and the
// open one ("... Open Kernel Module for x86_64  580.95.05  ...") alike.
func kernelModuleVersion(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	_, rest, ok := strings.Cut(line, "Kernel Module")
	if !ok {
		return "unknown"
	}
	for _, f := range strings.Fields(rest) {
		if driverVersionRE.MatchString(f) {
			return f
		}
	}
	return "unknown"
}

// driverVersionRE matches an NVIDIA driver version: 580.65.06, 550.54.
var driverVersionRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)+$`)

// usageError marks errors that exit with exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// verdictError ends a run whose verdict is at least as bad as --fail-on.
type verdictError struct{ verdict, reason string }

func (e verdictError) Error() string {
	return fmt.Sprintf("verdict %s (%s)", e.verdict, e.reason)
}

// main runs the command line args and returns the exit code.
func (a *app) main(ctx context.Context, args []string) int {
	root := a.rootCommand()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var ue usageError
	var ve verdictError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ve):
		fmt.Fprintf(a.stderr, "%s: %v\n", a.name, err)
		return exitVerdict
	case errors.As(err, &ue), strings.HasPrefix(err.Error(), "unknown command"), strings.HasPrefix(err.Error(), "unknown flag"):
		fmt.Fprintf(a.stderr, "%s: %v\n", a.name, err)
		return exitUsage
	default:
		fmt.Fprintf(a.stderr, "%s: %v\n", a.name, err)
		return exitError
	}
}
