// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Command kquantctl is kquant's command line, also installed as the kubectl
// plugin kubectl-kquant (the same program under a second name): it runs the
// quantization engine without a cluster (run: local GPU or reference
// backend), and reads a cluster's results (get results, compare, export,
// describe run) with the kubeconfig flags of kubectl.
package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/term"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	a := newApp(programName(os.Args[0]), os.Stdout, os.Stderr, os.Stdin, term.IsTerminal(int(os.Stderr.Fd())))
	code := a.main(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// programName is "kubectl kquant" when the binary is called as the plugin
// (kubectl-kquant), else "kquantctl".
func programName(arg0 string) string {
	if strings.HasPrefix(filepath.Base(arg0), "kubectl-kquant") {
		return "kubectl kquant"
	}
	return "kquantctl"
}
