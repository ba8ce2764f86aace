// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Command pause is the local cluster's pod sandbox process, built here so that
// nothing is pulled: it holds the pod's namespaces, reaps the zombies of
// containers that share its PID namespace, and exits 0 on SIGINT or SIGTERM,
// as the upstream pause container does.
//
// Arguments name environment variables that it prints first, one NAME=value
// line each to stdout (a missing one as NAME unset): the local cluster's
// tests read, in a pod's logs, what the runtime gave a container, such as the
// NVIDIA_VISIBLE_DEVICES of a simulated GPU. The sandbox gets no arguments.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	printEnv(os.Stdout, os.Args[1:])
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child; several may end for one SIGCHLD.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// printEnv writes NAME=value for each of names.
func printEnv(w io.Writer, names []string) {
	for _, name := range names {
		if v, ok := os.LookupEnv(name); ok {
			fmt.Fprintf(w, "%s=%s\n", name, v)
		} else {
			fmt.Fprintf(w, "%s unset\n", name)
		}
	}
}
