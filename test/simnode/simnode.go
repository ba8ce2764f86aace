// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package simnode

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/internal/logging"
)

// Flags is the part of the command line both programs take.
type Flags struct {
	// Simulate is the simulated GPUs, as simulate.Parse reads them.
	Simulate string
	// NodeName is the node, the same as its kquant agent's.
	NodeName string
	// Kubeconfig is the API client's kubeconfig; empty: no client.
	Kubeconfig string
	// Log is the logging flags.
	Log logging.Options
}

// AddFlags registers --simulate, --node-name, --kubeconfig (with its help
// text, which says what the program uses the API for) and the log flags.
func (f *Flags) AddFlags(fs *flag.FlagSet, kubeconfigHelp string) {
	fs.StringVar(&f.Simulate, "simulate", "", "simulated GPUs, as <product>:<count>[,...] (required); products: "+fmt.Sprint(simulate.Keys()))
	fs.StringVar(&f.NodeName, "node-name", defaultNodeName(), "node name, the same as the kquant agent's (default $NODE_NAME, else the host name in lower case, as the kubelet's)")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", kubeconfigHelp)
	f.Log.AddFlags(fs)
}

// Parse parses args into fs, refusing stray arguments and a missing
// --simulate.
func (f *Flags) Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if f.Simulate == "" {
		return errors.New("--simulate is required, for example --simulate H100:4")
	}
	return nil
}

func defaultNodeName() string {
	if n := os.Getenv("NODE_NAME"); n != "" {
		return n
	}
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return strings.ToLower(h)
}

// Node is what the flags give a program.
type Node struct {
	Spec simulate.Spec
	Log  logr.Logger
	// Client is nil without --kubeconfig.
	Client kubernetes.Interface
}

// Setup reads the simulated GPUs, makes the logger and, with --kubeconfig,
// the API client (userAgent names the program to the API server).
func (f *Flags) Setup(userAgent string) (*Node, error) {
	spec, err := simulate.Parse(f.Simulate)
	if err != nil {
		return nil, err
	}
	log, err := f.Log.New(os.Stderr)
	if err != nil {
		return nil, err
	}
	n := &Node{Spec: spec, Log: log}
	if f.Kubeconfig == "" {
		return n, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", f.Kubeconfig, err)
	}
	cfg.UserAgent = userAgent
	if n.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("making the API client: %w", err)
	}
	return n, nil
}

// Context carries the logger and ends on SIGTERM or SIGINT.
func (n *Node) Context() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(logr.NewContext(context.Background(), n.Log), syscall.SIGTERM, syscall.SIGINT)
}

// Main runs run with the program's arguments; -h is no error, any other
// error is printed after the program's name and exits 1.
func Main(name string, run func(args []string) error) {
	if err := run(os.Args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
