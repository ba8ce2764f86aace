// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Command nvmlrelease runs the agent's driver release (agent/nvml's Release
// and Reopen, what the agent does for a GPU Operator driver upgrade) against
// the real NVML and prints the process's open /dev/nvidia* descriptors
// after the open, after the release and after the reopen. It fails when a
// descriptor survives the release: the driver could not be unloaded.
//
// On a GPU node, or in a container with the driver mounted:
//
//	go build -o nvmlrelease ./test/nvmlrelease && ./nvmlrelease
//
// It is a test of the product on a device, not part of it, and small enough to
// travel to a GPU machine beside the checkout.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/kquant/kquant/agent/nvml"
)

func main() {
	if err := run(context.Background(), os.Stdout, gonvml.New(), "/proc/self/fd"); err != nil {
		fmt.Fprintln(os.Stderr, "nvmlrelease:", err)
		os.Exit(1)
	}
}

// run opens lib as the agent does, releases it and reopens it, printing the
// descriptors of fdDir that point into /dev/nvidia* at each step.
func run(ctx context.Context, out io.Writer, lib gonvml.Interface, fdDir string) error {
	d, err := nvml.Open(ctx, lib)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	if err := show(ctx, out, "after open", d, fdDir); err != nil {
		return err
	}
	if err := d.Release(); err != nil {
		return err
	}
	held, err := driverDescriptors(fdDir)
	if err != nil {
		return err
	}
	report(out, "after release", held, "(released)")
	if err := d.Reopen(ctx); err != nil {
		return err
	}
	if err := show(ctx, out, "after reopen", d, fdDir); err != nil {
		return err
	}
	if len(held) > 0 {
		return fmt.Errorf("%d /dev/nvidia* descriptors still open after the release", len(held))
	}
	return nil
}

// show discovers (which opens the devices, as the agent's refresh does) and
// prints the descriptors.
func show(ctx context.Context, out io.Writer, step string, d *nvml.NVML, fdDir string) error {
	node, err := d.Discover(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	fds, err := driverDescriptors(fdDir)
	if err != nil {
		return err
	}
	report(out, step, fds, fmt.Sprintf("(driver %s, %d GPUs)", node.DriverVersion, len(node.GPUs)))
	return nil
}

func report(out io.Writer, step string, fds []string, note string) {
	fmt.Fprintf(out, "%s %s: %d /dev/nvidia* descriptors\n", step, note, len(fds))
	for _, fd := range fds {
		fmt.Fprintln(out, "  "+fd)
	}
}

// driverDescriptors lists fdDir's entries that link into /dev/nvidia*, as
// "fd -> target", sorted: what ls -l /proc/self/fd shows of the driver.
func driverDescriptors(fdDir string) ([]string, error) {
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, fmt.Errorf("listing open descriptors: %w", err)
	}
	var out []string
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err != nil {
			continue // closed since ReadDir (the directory's own descriptor)
		}
		if strings.HasPrefix(target, "/dev/nvidia") {
			out = append(out, e.Name()+" -> "+target)
		}
	}
	slices.Sort(out)
	return out, nil
}
